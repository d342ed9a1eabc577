#!/usr/bin/env bash
# Shows that two tfrs builds render every render fixture to the same bytes: BASE renders each
# fixture into a fresh directory, then NEW re-renders the same inputs with `--check` into it.
# Sealing reuses ciphertext whose fingerprints still match, so `up to date` means that every
# file, plan.json and kustomization.yaml included, is byte for byte what BASE wrote (a changed
# secret value would change its fingerprint, and so its file).
#
# usage: scripts/same-bytes.sh BASE_TFRS NEW_TFRS [WORKDIR]
# The fixtures' `fromEnv` values are the test-only values of tests/common/mod.rs.
set -euo pipefail
base=$(realpath "$1") new=$(realpath "$2")
work=$(realpath -m "${3:-${TMPDIR:-/tmp}/tfrs-same-bytes}")
cd "$(dirname "$0")/.."
rm -rf "$work" && mkdir -p "$work"
export TFRS_MASTER_KEY="$(tr -d '[:space:]' < fixtures/demo/keys/master.key)"
export TFRS_TEST_REGISTRY_PASSWORD=test-registry-token-7f3a9c TFRS_TEST_REDIS_PASSWORD=test-redis-password-2b1e \
  TFRS_TEST_OPENAI_KEY=sk-env-openai-test-5c1d TFRS_TEST_ESO_CLIENT_ID=eso-client-id-test-81f0 \
  TFRS_TEST_ESO_CLIENT_SECRET=eso-client-secret-test-c7a2 ACME_OPENAI_API_KEY=sk-test-acme-openai-key \
  OTLP_ESO_CLIENT_ID=test-otlp-eso-client-id OTLP_ESO_CLIENT_SECRET=test-otlp-eso-client-secret
unset OPERATOR_HELM_REPO_URL OPERATOR_CHART_VERSION OPERATOR_IMAGE_TAG OPERATOR_RELEASE_NAME
export TFRS_CACHE_DIR="$work/cache"
status=0
for fixture in demo render-argocd-tke render-sops-docker-desktop render-minimal render-hostile \
  render-enterprise-full render-enterprise-minimal render-servers render-billing; do
  "$base" render "fixtures/$fixture" --out "$work/$fixture" --no-memo >/dev/null
  files=$(find "$work/$fixture" -type f | wc -l)
  if result=$("$new" render "fixtures/$fixture" --out "$work/$fixture" --check 2>&1); then
    echo "same bytes: $fixture ($files files)"
  else
    echo "DIFFERENT: $fixture: $result"
    status=1
  fi
done
exit $status
