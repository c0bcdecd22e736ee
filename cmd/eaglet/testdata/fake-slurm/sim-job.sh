#!/bin/sh
# The batch script the fake sbatch runs: `sim-job.sh ADDRESS_FILE EAGLET
# [sim-server flags]` serves eaglet sim-server on a free port and writes
# its address to ADDRESS_FILE once it listens, as a real job's script
# writes {address_file}.
set -eu
address_file=$1 eaglet=$2
shift 2
"$eaglet" sim-server -addr 127.0.0.1:0 "$@" &
server=$!
until grep -q ' on http://' "$SLURM_OUTPUT"; do
	kill -0 "$server"
	sleep 0.05
done
sed -n 's|.* on \(http://[^ ]*\) .*|\1|p' "$SLURM_OUTPUT" | head -n 1 >"$address_file.tmp"
mv "$address_file.tmp" "$address_file"
wait "$server"
