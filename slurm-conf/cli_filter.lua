--[[
cli_filter.lua - iostage's submit-time filter (Slurm 22.05 cli_filter/lua).

Install it as cli_filter.lua beside slurm.conf on the login nodes, with
`CliFilterPlugins=cli_filter/lua` in slurm.conf. Sites that already have a
cli_filter.lua call iostage_job_note(job_id) from their own
slurm_cli_post_submit instead.

What it does (docs/SCHEDULING.md, Pre-staging): at submit the iostage SPANK
plugin registered the job's datasets with iostagectld and left a ticket in
sbatch's own environment (IOSTAGE_TICKET). Only after the submission does
sbatch know the job id: post_submit hands it to the service with the
ticket (`iostage job-note`, in the user's own MUNGE credential), so the
service can stage the job's datasets on the nodes Slurm plans to start it
on while it waits. Nothing here can fail or hold a submission.
--]]

local IOSTAGE = "/usr/local/bin/iostage"
local IOSTAGE_CONF = "/etc/slurm/iostage.conf"

local function quote(s)
	return "'" .. string.gsub(s, "'", "'\\''") .. "'"
end

function iostage_job_note(job_id)
	local t = os.getenv("IOSTAGE_TICKET")
	if t == nil or #t ~= 32 or not string.match(t, "^%x+$") then
		return
	end
	job_id = tonumber(job_id)
	if job_id == nil then
		return
	end
	os.execute(quote(IOSTAGE) .. " -c " .. quote(IOSTAGE_CONF) ..
		string.format(" job-note %d %s >/dev/null 2>&1", job_id, t))
end

function slurm_cli_setup_defaults(options, early_pass)
	return slurm.SUCCESS
end

function slurm_cli_pre_submit(options, offset)
	return slurm.SUCCESS
end

function slurm_cli_post_submit(offset, job_id, step_id)
	iostage_job_note(job_id)
	return slurm.SUCCESS
end
