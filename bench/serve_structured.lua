-- wrk script: POST the events of an NDJSON file one per request in structured mode
-- (application/cloudevents+json) at a fixed rate: each connection waits INTERVAL_MS between its
-- requests, so c connections send about c * 1000 / INTERVAL_MS requests per second (while the
-- answers take less than the interval). Thread k of n takes events k, k+n, ...
--   wrk -t1 -c10 -d10s --latency -s bench/serve_structured.lua URL -- FILE INTERVAL_MS THREADS
local counter = 0

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
end
-- (each thread runs init in a Lua state of its own: the thread count comes as an argument)

function init(args)
  local path = args[1]
  interval_ms = tonumber(args[2] or "10")
  local threads_n = tonumber(args[3] or "1")
  events = {}
  local index = 0
  for line in io.lines(path) do
    if #line > 0 then
      if index % threads_n == id then events[#events + 1] = line end
      index = index + 1
    end
  end
  next_event = 1
  headers = {["Content-Type"] = "application/cloudevents+json"}
end

function delay()
  return interval_ms
end

function request()
  local body = events[next_event]
  next_event = next_event % #events + 1  -- wraps: a repeat is answered duplicate
  return wrk.format("POST", "/events", headers, body)
end
