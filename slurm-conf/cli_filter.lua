-- cli_filter.lua - iostage's part of the cli_filter/lua plugin on login
-- nodes (docs/SCHEDULING.md, Pre-staging). slurm.conf:
-- CliFilterPlugins=cli_filter/lua, this file beside slurm.conf.
--
-- At submit the iostage SPANK plugin registered the job's datasets with
-- iostagectld and left a ticket in sbatch's environment (IOSTAGE_TICKET).
-- Only after the submission does sbatch know the job id; here it is handed
-- to the service with the ticket (`iostage job-note`, in the user's own
-- MUNGE credential), so the service can stage the job's datasets on the
-- nodes Slurm plans to start it on while it waits. Nothing here can fail
-- or hold a submission. A site with its own cli_filter.lua calls
-- iostage_post_submit(job_id) from its slurm_cli_post_submit.

-- The iostage command (the package's bindir).
IOSTAGE_CLI = IOSTAGE_CLI or "iostage"

function iostage_post_submit(job_id)
  local t = os.getenv("IOSTAGE_TICKET")
  if t == nil or not string.match(t, "^%x+$") or #t ~= 32 then
    return
  end
  job_id = tonumber(job_id)
  if job_id == nil then
    return
  end
  local conf = os.getenv("IOSTAGE_CONF")
  local c = ""
  if conf ~= nil and string.match(conf, "^[%w%./_-]+$") then
    c = "-c " .. conf .. " "
  end
  os.execute(string.format("%s %sjob-note %d %s >/dev/null 2>&1",
                           IOSTAGE_CLI, c, job_id, t))
end

function slurm_cli_setup_defaults(options, early_pass)
  return slurm.SUCCESS
end

function slurm_cli_pre_submit(options, offset)
  return slurm.SUCCESS
end

function slurm_cli_post_submit(offset, job_id, step_id)
  iostage_post_submit(job_id)
  return slurm.SUCCESS
end
