#!/usr/bin/env bash
# Loopback HTTP throughput: serves FILE (a safetensors checkpoint, default /tmp/bench1g.safetensors)
# with Debian's nginx on 127.0.0.1 and measures, in one run and interleaved, `curl -o /dev/null`
# of the URL against `ballast load --no-cache` with 1 and 8 concurrent ranges (GB/s of file
# bytes, median of REPS), then the bytes a lazy load of one tensor fetched (from nginx's log).
# Usage: bench/http_throughput.sh [FILE] [REPS]   (build the release preset first)
set -euo pipefail
cd "$(dirname "$0")/.."
file=${1:-/tmp/bench1g.safetensors}
reps=${2:-3}
ballast=build/release/tools/ballast
[ -x "$ballast" ] || { echo "build the release preset first" >&2; exit 1; }
[ -f "$file" ] || { echo "no $file" >&2; exit 1; }
dir=$(mktemp -d)
trap 'kill $(cat "$dir/pid" 2>/dev/null) 2>/dev/null || true; rm -rf "$dir"' EXIT
mkdir -p "$dir/files" "$dir/tmp"
ln -s "$(realpath "$file")" "$dir/files/model.safetensors"
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$dir/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $dir/nginx.pid; error_log $dir/error.log warn;
events { worker_connections 256; }
http {
  log_format b '\$request_method|\$http_range|\$status|\$body_bytes_sent';
  access_log $dir/access.log b;
  client_body_temp_path $dir/tmp/b; proxy_temp_path $dir/tmp/p; fastcgi_temp_path $dir/tmp/f;
  uwsgi_temp_path $dir/tmp/u; scgi_temp_path $dir/tmp/s;
  types { } default_type application/octet-stream; keepalive_requests 100000; sendfile on;
  server { listen 127.0.0.1:$port; location /files/ { alias $dir/files/; } }
}
CONF
/usr/sbin/nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" & echo $! > "$dir/pid"
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
url="http://127.0.0.1:$port/files/model.safetensors"
size=$(stat -L -c %s "$file")
cat "$file" > /dev/null  # page cache warm for every contender

seconds() { local t0 t1; t0=$(date +%s.%N); "$@" > /dev/null; t1=$(date +%s.%N); echo "$t1 - $t0" | bc -l; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A runs
for _ in $(seq "$reps"); do
  runs[curl]+="$(seconds curl -s -o /dev/null "$url")"$'\n'
  runs[ranges1]+="$(seconds "$ballast" load --no-cache --connections 1 "$url")"$'\n'
  runs[ranges8]+="$(seconds "$ballast" load --no-cache --connections 8 "$url")"$'\n'
done
printf '| client | median s | GB/s | vs curl |\n|---|---:|---:|---:|\n'
curl_s=$(printf '%s' "${runs[curl]}" | median)
for k in curl ranges1 ranges8; do
  s=$(printf '%s' "${runs[$k]}" | median)
  printf '| %s | %.3f | %.2f | %.2fx |\n' "$k" "$s" "$(echo "$size / $s / 1000000000" | bc -l)" \
    "$(echo "$curl_s / $s" | bc -l)"
done
first=$("$ballast" inspect --json --no-cache "$url" | /usr/bin/python3 -c \
  'import json,sys; t=json.load(sys.stdin)["tensors"]; print(t[0]["name"], t[0]["nbytes"])')
: > "$dir/access.log"
"$ballast" hash --no-cache --tensor "${first% *}" "$url" > /dev/null
fetched=$(awk -F'|' '{s += $4} END {print s}' "$dir/access.log")
echo
echo "lazy load of one tensor (${first% *}, ${first#* } bytes) from a $size-byte file: $fetched bytes fetched in $(wc -l < "$dir/access.log") requests"
