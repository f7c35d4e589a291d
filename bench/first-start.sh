#!/bin/bash
# A fresh clone's first `npm start`, timed until it answers `initialize` (docs/performance.md,
# "The first start"): no target/, no node_modules/, and no wasm-bindgen or worker-build on PATH
# (cargo installs into a folder of its own). cargo's registry cache and npm's cache are left as
# they are. Where the cgroup v1 cpuacct controller is writable (root), the run's CPU time too.
#
#   bash bench/first-start.sh [clone-dir] [port]     (clone-dir: /tmp/mcp-edge-first-start)
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-/tmp/mcp-edge-first-start}
port=${2:-8797}
rm -rf "$dir" "$dir-tools" "$dir-bin"
git clone -q "$repo" "$dir"
# cargo and rustup, without the folder that holds any installed wasm-bindgen or worker-build.
mkdir -p "$dir-bin"
for tool in cargo rustc rustdoc rustup cargo-clippy clippy-driver; do
  found=$(command -v "$tool") && ln -s "$found" "$dir-bin/$tool"
done
cd "$dir" || exit 1
export CARGO_INSTALL_ROOT="$dir-tools"
PATH="$dir-tools/bin:$dir-bin:$(echo "$PATH" | tr ':' '\n' | grep -v '/\.cargo/bin' | paste -sd:)"
export PATH PORT=$port DEMO_UPSTREAM_PORT=$((port + 1))
unset CARGO_TARGET_DIR
if command -v wasm-bindgen || command -v worker-build; then echo "a tool is still on PATH" >&2; exit 1; fi
# The machine's load while it runs: the times mean little without it.
(while true; do echo "[load $(date +%T)] $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 15; done) > "$dir-load.log" &
sampler=$!
cg=/sys/fs/cgroup/cpuacct/mcp-edge-first-start
mkdir -p "$cg" 2>/dev/null && echo $$ > "$cg/cgroup.procs" 2>/dev/null || cg=
cpu0=$([ -n "$cg" ] && cat "$cg/cpuacct.usage" || echo 0)
t0=$(date +%s.%N)
setsid npm start > "$dir.log" 2>&1 &
start=$!
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"first-start","version":"1"}}}'
until curl -s -m 5 -X POST "http://127.0.0.1:$port/mcp" -H 'content-type: application/json' \
    -H 'accept: application/json, text/event-stream' -d "$init" 2>/dev/null | grep -q serverInfo; do
  kill -0 $start 2>/dev/null || { echo "npm start exited: see $dir.log" >&2; break; }
  sleep 1
done
t1=$(date +%s.%N)
cpu=$([ -n "$cg" ] && echo ", CPU $((($(cat "$cg/cpuacct.usage") - cpu0) / 1000000000)) s" || echo '')
echo "initialize answered $(echo "$t1 - $t0" | bc) s after npm start$cpu (steps: grep '^\[setup' $dir.log; load: $dir-load.log)"
kill -TERM -$start 2>/dev/null
kill $sampler
