import { render } from 'preact';
import { apiClient } from './api';
import { App } from './app';
import { askFirstQueries } from './first-queries';
import { session } from './session';
import './style.css';

const root = document.getElementById('app')!;
const client = apiClient();
// Who is signed in before the first render (index.html preloads the answer beside the scripts): a
// signed-in reload draws its page at once, not the sign-in form first, and its first queries leave
// beside that render. If the session cannot be read, the sign-in page asks again and says why.
void session.state().then(
  (opened) => {
    if (opened.signedIn && opened.viewer) askFirstQueries(client, opened.viewer, location.hash);
    render(<App opened={opened} client={client} />, root);
  },
  () => render(<App client={client} />, root),
);
