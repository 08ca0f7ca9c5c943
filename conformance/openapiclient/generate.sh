#!/usr/bin/env bash
# Generates the OpenAPI client from the document `cairn serve` serves: it
# builds cairn, starts it on a fresh file:// bucket on a free loopback
# port with a bearer token (a secured server's document, as deployments
# serve it), fetches /openapi.json into OUTDIR/openapi.json and runs
# oapi-codegen (oapi-codegen.yaml) on it into OUTDIR/client.gen.go.
#
#   conformance/openapiclient/generate.sh          # regenerate in place
#   conformance/openapiclient/generate.sh OUTDIR   # CI: then diff OUTDIR
#
# Needs go, curl and oapi-codegen ($OAPI_CODEGEN, else on PATH).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$(mkdir -p "${1:-$here}" && cd "${1:-$here}" && pwd)
oapi=${OAPI_CODEGEN:-oapi-codegen}

work=$(mktemp -d)
pid=
stop() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap stop EXIT

(cd "$root" && go build -o "$work/cairn" ./cmd/cairn)
mkdir "$work/data"
: >"$work/log"
CAIRN_BUCKET="file://$work/data" CAIRN_ADDR=127.0.0.1:0 CAIRN_TOKENS=openapi=generate-openapi-client-token \
	"$work/cairn" serve >"$work/log" 2>&1 &
pid=$!
addr=
for _ in $(seq 100); do
	addr=$(sed -n 's/.*"msg":"serving","addr":"\([^"]*\)".*/\1/p' "$work/log" | head -n 1)
	if [ -n "$addr" ] && curl -sf -o /dev/null "http://$addr/healthz"; then break; fi
	if ! kill -0 "$pid" 2>/dev/null; then echo "cairn serve exited:"; cat "$work/log"; exit 1; fi
	addr=
	sleep 0.1
done
if [ -z "$addr" ]; then echo "cairn serve did not answer"; cat "$work/log"; exit 1; fi

curl -sf -o "$out/openapi.json" "http://$addr/openapi.json"
(cd "$out" && "$oapi" -config "$here/oapi-codegen.yaml" openapi.json)
echo "generated $out/client.gen.go from the document served on $addr"
