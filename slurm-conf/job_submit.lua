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
-- --prefer the user gave is never changed. A site with its own
-- job_submit.lua calls iostage_prefer(job_desc) from its slurm_job_submit.

-- Only what iostagectld writes: dataset features joined with '&'.
local function iostage_valid(p)
  if p == nil or p == "" or #p > 1024 then
    return false
  end
  local rest = string.gsub(p, "ios_%x%x%x%x%x%x%x%x", "")
  rest = string.gsub(rest, "&", "")
  return rest == "" and string.match(p, "%u") == nil
end

function iostage_prefer(job_desc)
  local env = job_desc.spank_job_env
  if env == nil or (job_desc.prefer ~= nil and job_desc.prefer ~= "") then
    return
  end
  for _, v in pairs(env) do
    local p = string.match(v, "^IOSTAGE_PREFER=(.*)$") or
              string.match(v, "^SPANK_IOSTAGE_PREFER=(.*)$")
    if p ~= nil then
      if iostage_valid(p) then
        job_desc.prefer = p
      end
      return
    end
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
