-- Argo CD health of a fieldops.dev object (FieldPatch, ClusterFieldPatch,
-- ManagedWorkload, PodSet: one script, the same in each kind's directory).
-- It reads the kstatus conditions every fieldops kind reports (Ready,
-- Reconciling, Stalled), in this order; docs/gitops.md#health explains why.
--   1. being deleted: Progressing (the finalizer hands fields back).
--   2. no Ready condition, or one set for an older metadata.generation:
--      Progressing (the controller has not judged this spec yet).
--   3. Ready=False with reason Suspended (spec.suspend): Suspended.
--   4. Stalled=True (an error a retry does not fix): Degraded.
--   5. Ready=True at the observed generation: Healthy.
--   6. anything else (Reconciling=True: a missing target, a contest that
--      backs off, an account that may not write yet, a rollout): Progressing.
local hs = {}

local function find(conditions, wanted)
  if conditions == nil then
    return nil
  end
  for _, c in ipairs(conditions) do
    if c.type == wanted then
      return c
    end
  end
  return nil
end

local function describe(c)
  local reason = c.reason or ""
  if c.message ~= nil and c.message ~= "" then
    if reason == "" then
      return c.message
    end
    return reason .. ": " .. c.message
  end
  return reason
end

local generation = obj.metadata.generation or 0
local conditions = nil
local observed = 0
if obj.status ~= nil then
  conditions = obj.status.conditions
  observed = obj.status.observedGeneration or 0
end
local ready = find(conditions, "Ready")
local stalled = find(conditions, "Stalled")

if obj.metadata.deletionTimestamp ~= nil then
  hs.status = "Progressing"
  hs.message = "being deleted"
  if ready ~= nil and ready.status ~= "True" then
    hs.message = "being deleted: " .. describe(ready)
  end
  return hs
end

if ready == nil then
  hs.status = "Progressing"
  hs.message = "waiting for the fieldops manager to reconcile"
  return hs
end

if (ready.observedGeneration or observed) < generation then
  hs.status = "Progressing"
  hs.message = "waiting for the fieldops manager to reconcile generation " .. generation
  return hs
end

if ready.status == "False" and ready.reason == "Suspended" then
  hs.status = "Suspended"
  hs.message = describe(ready)
  return hs
end

if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = describe(stalled)
  return hs
end

if ready.status == "True" and observed >= generation then
  hs.status = "Healthy"
  hs.message = describe(ready)
  return hs
end

hs.status = "Progressing"
hs.message = describe(ready)
return hs
