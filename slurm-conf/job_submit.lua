-- job_submit.lua - iostage's part of slurmctld's job_submit/lua plugin
-- (docs/SCHEDULING.md). slurm.conf: JobSubmitPlugins=lua, this file beside
-- slurm.conf on the controller, and SchedulerParameters must contain
-- ignore_prefer_validation (iostagectld publishes no placement without it).
--
-- The iostage SPANK plugin asks iostagectld at submit which nodes hold the
-- job's datasets and leaves the answer in the job-control environment as
-- IOSTAGE_PREFER (dataset features such as ios_1a2b3c4d, joined with &).
-- Here it becomes the job's --prefer: Slurm tries those nodes first and,
-- when none is free, schedules the job as if nothing were preferred. A
-- --prefer the user gave is never changed. With PlacementHold= set, the
-- service also passes IOSTAGE_HOLD=1 and the preference becomes the
-- job's constraint too, which iostagectld clears after the hold. A site
-- with its own job_submit.lua calls iostage_prefer(job_desc) from its
-- slurm_job_submit.

-- Only what iostagectld writes: dataset features joined with '&'.
local function iostage_valid(p)
  if p == nil or p == "" or #p > 1024 then
    return false
  end
  local rest = string.gsub(p, "ios_%x%x%x%x%x%x%x%x", "")
  rest = string.gsub(rest, "&", "")
  return rest == "" and string.match(p, "%u") == nil
end

-- Held from submission: one node (a constraint holds on every node of
-- the allocation), nothing the user constrained, waiting for nothing but
-- nodes. iostagectld clears the constraint PlacementHold= after submit.
local function iostage_holdable(job_desc)
  local n = job_desc.min_nodes
  return (job_desc.features == nil or job_desc.features == "") and
         (n == nil or n <= 1 or n >= slurm.NO_VAL) and
         (job_desc.dependency == nil or job_desc.dependency == "") and
         (job_desc.begin_time == nil or job_desc.begin_time == 0)
end

function iostage_prefer(job_desc)
  local env = job_desc.spank_job_env
  local p, hold
  if env == nil or (job_desc.prefer ~= nil and job_desc.prefer ~= "") then
    return
  end
  -- A job that names its nodes (-w) gets no preference: it cannot help,
  -- and Slurm 24.11 leaves such a job pending for good ("Requested node
  -- configuration is not available") when none of its nodes has the
  -- preferred feature.
  if job_desc.req_nodes ~= nil and job_desc.req_nodes ~= "" then
    return
  end
  for _, v in pairs(env) do
    p = p or string.match(v, "^IOSTAGE_PREFER=(.*)$") or
             string.match(v, "^SPANK_IOSTAGE_PREFER=(.*)$")
    if v == "IOSTAGE_HOLD=1" or v == "SPANK_IOSTAGE_HOLD=1" then
      hold = true
    end
  end
  if p == nil or not iostage_valid(p) then
    return
  end
  job_desc.prefer = p
  -- PlacementHold= is on (the service said so): the job waits a bounded
  -- time for those nodes even when others are idle (delay scheduling)
  if hold and iostage_holdable(job_desc) then
    job_desc.features = p
  end
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  iostage_prefer(job_desc)
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end

return slurm.SUCCESS
