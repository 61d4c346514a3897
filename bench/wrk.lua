-- bench/wrk.lua: one machine-readable line per wrk run, parsed by bench/run.sh.
-- Latency percentiles come from wrk's own histogram (microseconds).
done = function(summary, latency, requests)
	local e = summary.errors
	io.write(string.format(
	    "RESULT requests=%d bytes=%d duration_us=%d p50_us=%d p99_us=%d " ..
	    "errors=%d connect=%d read=%d write=%d status=%d timeout=%d\n",
	    summary.requests, summary.bytes, summary.duration,
	    latency:percentile(50), latency:percentile(99),
	    e.connect + e.read + e.write + e.status + e.timeout,
	    e.connect, e.read, e.write, e.status, e.timeout))
end
