--- Link calibration: what `xsite calibrate` measures and writes.
--
-- The command runs an MPI ping-pong through Slurm between one node of each
-- site (small messages for the latency, large ones for the bandwidth); this
-- module reads the ping-pong's output, judges the link against the
-- configured figures, and writes the link state file the policy and the
-- SPANK plugin read (xsite.state.parse_link).  Nothing here runs
-- anything: the command does.
-- @module xsite.calibrate

local units = require("xsite.units")

local M = {}

--- Defaults of the judgement.
M.DEFAULTS = {
  degraded_bandwidth = 0.5,  -- below this share of the configured bandwidth: degraded
  degraded_latency = 2.0,    -- above this multiple of the configured latency: degraded
}

--- Read one line of the ping-pong's output:
-- `pingpong from=A to=B bytes=N iters=N oneway_us min=… median=… … mbps=…`.
-- @return { from, to, bytes, median_us, mbps }, or nil and a message
function M.parse_pingpong(text)
  if type(text) ~= "string" then return nil, "no output" end
  local line = text:match("pingpong from=[^\n]*")
  if not line then
    local last = text:match("([^\n]+)\n*$") or "nothing"
    return nil, "no ping-pong result in the output (it said last: " .. last .. ")"
  end
  local r = {
    from = line:match("from=(%S+)"), to = line:match("to=(%S+)"),
    bytes = tonumber(line:match("bytes=(%d+)")),
    median_us = tonumber(line:match("median=([%d%.]+)")),
    mbps = tonumber(line:match("mbps=([%d%.]+)")),
  }
  if not (r.bytes and r.median_us and r.mbps) then
    return nil, "a ping-pong result without bytes, median or mbps: " .. line
  end
  return r
end

--- Judge the measured link against the configured one.
-- @param link the configured link (xsite.config: bandwidth per channel, latency, channels)
-- @param latency measured one-way latency in seconds, or nil when the link failed
-- @param bandwidth measured bandwidth in B/s of one flow, or nil
-- @param opts optional thresholds (see DEFAULTS)
-- @return state ("up", "degraded" or "down") and the reason
function M.judge(link, latency, bandwidth, opts)
  opts = opts or {}
  local bw_share = opts.degraded_bandwidth or M.DEFAULTS.degraded_bandwidth
  local lat_mult = opts.degraded_latency or M.DEFAULTS.degraded_latency
  if not latency or not bandwidth then return "down", "the ping-pong across the link failed" end
  local reasons = {}
  if bandwidth < bw_share * link.bandwidth then
    reasons[#reasons + 1] = string.format("bandwidth %s is below %.0f%% of the configured %s",
      units.format_bandwidth(bandwidth), bw_share * 100, units.format_bandwidth(link.bandwidth))
  end
  if latency > lat_mult * link.latency then
    reasons[#reasons + 1] = string.format("latency %s is above %.3g times the configured %s",
      units.format_time(latency), lat_mult, units.format_time(link.latency))
  end
  if #reasons > 0 then return "degraded", table.concat(reasons, "; ") end
  return "up", "within the thresholds"
end

return M
