FROM node:24-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build
ENV HOST=0.0.0.0 NODE_ENV=production
EXPOSE 8080
CMD ["node", "dist/src/main.js"]
