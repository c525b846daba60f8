# spendgate's image: built in one stage, run from a second that holds only what runs.
# The build context is filtered by .dockerignore (no node_modules, .data, .env, .git).

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
# Compile (server, console, Prisma client), then drop devDependencies and the optional embedded
# PostgreSQL: the image always runs against DATABASE_URL.
RUN npm run build && npm prune --omit=dev --omit=optional --no-audit --no-fund

FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/prisma/migrations ./prisma/migrations
COPY --from=build /app/prisma/functions ./prisma/functions
# Not root: the image's own "node" user (uid 1000) owns nothing it could rewrite.
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT||8080}/readyz`).then((r)=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["node", "dist/src/main.js"]
