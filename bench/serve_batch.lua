-- wrk script: POST the events of an NDJSON file to /events in batch mode
-- (application/cloudevents-batch+json), BATCH events per request, until every batch is answered.
-- Thread k of THREADS takes batches k, k+THREADS, ... A batch is known answered by the event id
-- in its first decision's key. wrk (4.1) builds one request per thread before the run that it
-- never sends: the thread's first batch is sent once more after its last (unless answered by
-- then; a repeat is answered duplicate, so the applied count stays the number of events).
--   wrk -t1 -c8 -d600s -s bench/serve_batch.lua http://127.0.0.1:PORT -- FILE BATCH THREADS
local threads = {}
local counter = 0

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

-- (each thread runs init in a Lua state of its own: the thread count comes as an argument)
function init(args)
  local path, batch = args[1], tonumber(args[2] or "100")
  local threads_n = tonumber(args[3] or "1")
  local lines = {}
  for line in io.lines(path) do
    if #line > 0 then lines[#lines + 1] = line end
  end
  bodies, batch_of, answered_set = {}, {}, {}
  local index = 0
  for first = 1, #lines, batch do
    if index % threads_n == id then
      local last = math.min(first + batch - 1, #lines)
      bodies[#bodies + 1] = "[" .. table.concat(lines, ",", first, last) .. "]"
      batch_of[string.match(lines[first], '"id":"([^"]+)"')] = #bodies
    end
    index = index + 1
  end
  next_body, answered, refused, resent, again = 1, 0, 0, 0, 1
  headers = {["Content-Type"] = "application/cloudevents-batch+json"}
end

function request()
  if next_body <= #bodies then
    next_body = next_body + 1
    return wrk.format("POST", "/events", headers, bodies[next_body - 1])
  end
  if again == 1 and not answered_set[1] then
    again = 0
    resent = resent + 1
    return wrk.format("POST", "/events", headers, bodies[1])
  end
  return wrk.format("GET", "/healthz")  -- until the others are answered
end

function response(status, headers, body)
  if status ~= 200 then refused = refused + 1 end
  local key = string.match(body, '"key":"([^"]*)"')
  if key then
    local i = batch_of[string.match(key, "([^:]+)$")]
    if i and not answered_set[i] then
      answered_set[i] = true
      answered = answered + 1
    end
  end
  if answered >= #bodies then wrk.thread:stop() end
end

function done(summary, latency, requests)
  for _, thread in ipairs(threads) do
    io.write(string.format("thread %d: %d batches answered, %d sent again, %d refused\n",
      thread:get("id"), thread:get("answered"), thread:get("resent"), thread:get("refused")))
  end
end
