# Orion: build, then a slim runtime image on Node 24 (an LTS line, maintained until April 2028).
FROM node:24-trixie-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# the typed client is an npm workspace: npm ci needs its package.json (the image does not build it)
COPY clients/typescript/package.json ./clients/typescript/
# exactly what the lockfile says (it lists every platform's optional builds)
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY src ./src
# the service only: `npm run build` also builds clients/typescript, which the image does not hold
RUN npx nest build && npm prune --omit=dev

FROM node:24-trixie-slim
ENV NODE_ENV=production PORT=3000 DATA_DIR=/data WORKSPACE_ROOT=/workspace
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
RUN mkdir -p /data /workspace && chown -R node:node /data /workspace
USER node
EXPOSE 3000
# ready = database reachable, migrations applied, model configured; node's fetch needs no curl
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=5 CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/api/health/ready').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"]
CMD ["node", "dist/main.js"]
