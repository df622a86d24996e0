# Orion: build, then a slim runtime image on Node 24 (an LTS line, maintained until April 2028).
FROM node:24-trixie-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# the typed client is an npm workspace: npm ci needs its package.json, and builds it (its prepare
# script) from its sources; the final image does not hold it
COPY clients/typescript/package.json clients/typescript/tsconfig.json ./clients/typescript/
COPY clients/typescript/src ./clients/typescript/src
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
COPY scripts/container-health.mjs ./scripts/
RUN mkdir -p /data /workspace && chown -R node:node /data /workspace
USER node
EXPOSE 3000
# ready = database reachable, migrations applied, model configured; node's fetch needs no curl.
# After 5 failures in a row the check ends Orion, so that a restart policy can start it again
# (Docker itself never restarts an unhealthy container): scripts/container-health.mjs
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=5 CMD ["node", "scripts/container-health.mjs"]
CMD ["node", "dist/main.js"]
