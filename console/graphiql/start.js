/* GraphiQL against this gateway's /graphql. Every script comes from the gateway (no CDN), and the
   headers you type (Authorization: Bearer …) stay in this tab: they are not saved. */
/* global React, ReactDOM, GraphiQL */
const fetcher = GraphiQL.createFetcher({ url: `${window.location.origin}/graphql` });
ReactDOM.createRoot(document.getElementById('graphiql')).render(
  React.createElement(GraphiQL, {
    fetcher,
    headerEditorEnabled: true,
    shouldPersistHeaders: false,
    defaultHeaders: '{\n  "Authorization": "Bearer <ADMIN_TOKEN or a project API key>"\n}',
    defaultQuery: '# Send your token in the Headers tab below, then run:\n{\n  viewer { admin projectName }\n  dashboard { today { unit amount } monthToDate { unit amount } }\n}\n',
  }),
);
