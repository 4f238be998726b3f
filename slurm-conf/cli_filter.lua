--[[
cli_filter.lua - iostage's submit-time filter (Slurm 22.05 cli_filter/lua).

Install it as cli_filter.lua beside slurm.conf on the login nodes, with
`CliFilterPlugins=cli_filter/lua` in slurm.conf. Sites that already have a
cli_filter.lua call iostage_pfs_license(options) from their own
slurm_cli_pre_submit and iostage_job_note(job_id) from their
slurm_cli_post_submit instead.

What it does: a job that reads datasets from the PFS in place rather than
staging them (its --io-profile lists them as streams, or with
--io-profile=auto the history advises streaming) asks for its share of
the PFS bandwidth as a Slurm license: PfsLicense=NAME and
PfsLicensePerJob=K in iostage.conf add NAME:K to the job's --licenses
(slurm.conf Licenses=NAME:N is the budget). Slurm then keeps the total
within N, and a job beyond it waits with reason Licenses.
docs/SCHEDULING.md.

Why a cli_filter and not the SPANK plugin: in Slurm 22.05 a SPANK plugin
cannot set a job's licenses, and the cli_filter runs before the plugin's
post-option hook, so the decision is made here by `iostage pfs-license`,
which resolves the profile with the plugin's own code, as the user.
Whatever goes wrong here leaves the job as the user wrote it: the plugin
reports a bad --io-profile itself.

After the submission (docs/SCHEDULING.md, Pre-staging): the plugin
registered the job's datasets with iostagectld and left a ticket in
sbatch's own environment (IOSTAGE_TICKET). Only now does sbatch know the
job id: iostage_job_note hands it to the service with the ticket
(`iostage job-note`, in the user's own MUNGE credential), so the service
can stage the job's datasets on the nodes Slurm plans to start it on
while it waits. Nothing here can fail or hold a submission, but what
goes wrong is said on sbatch's stderr (slurm.log_error): an `iostage`
that cannot run, or a job-note the service did not take, would otherwise
mean no license and no pre-staging, silently.

`make install` (and the packages) write IOSTAGE and IOSTAGE_CONF below
with the installed paths.
--]]

local IOSTAGE = "/usr/local/bin/iostage"
local IOSTAGE_CONF = "/etc/slurm/iostage.conf"

local function quote(s)
	return "'" .. string.gsub(s, "'", "'\\''") .. "'"
end

local function set(v)
	return v ~= nil and v ~= "" and v ~= "(null)"
end

-- Runs the shell command CMD; returns its output lines and its exit
-- status (-1: not run). The status comes from the shell itself, so this
-- works in every Lua Slurm links (5.1's popen close tells nothing).
local function run(cmd)
	local p = io.popen(cmd .. '; echo "iostage-status:$?"', "r")
	if not p then
		return {}, -1
	end
	local lines, status = {}, -1
	for l in p:lines() do
		local pre, st = string.match(l, "^(.-)iostage%-status:(%d+)$")
		if st then
			status = tonumber(st)
			l = pre
		end
		if l ~= "" then
			table.insert(lines, l)
		end
	end
	p:close()
	return lines, status
end

-- 126, 127: the shell could not run IOSTAGE at all
local function cannot_run(status)
	return status == 126 or status == 127 or status < 0
end

-- This process (sbatch, salloc or srun): its pid (iostage reads its
-- command line for the job name, as the plugin does, when
-- --io-profile=auto) and its name.
local function own_process()
	local f = io.open("/proc/self/stat", "r")
	if not f then
		return nil, nil
	end
	local line = f:read("*l")
	f:close()
	if not line then
		return nil, nil
	end
	return string.match(line, "^(%d+) %((.-)%)")
end

-- The value of the string KEY in the JSON text J, or nil. Slurm 22.05's
-- lua options table does not index SPANK options; they are only in
-- slurm.json_cli_options(options), as "spank:NAME". Lua 5.1 has no JSON
-- reader: this undoes the escapes Slurm's writer makes.
local function json_string(j, key)
	local pat = '"' .. string.gsub(key, "%p", "%%%0") .. '":"'
	local _, e = string.find(j, pat)
	if not e then
		return nil
	end
	local out, i = {}, e + 1
	local esc = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b",
		f = "\f", n = "\n", r = "\r", t = "\t" }
	while i <= #j do
		local c = string.sub(j, i, i)
		if c == '"' then
			return table.concat(out)
		elseif c == "\\" then
			local n = string.sub(j, i + 1, i + 1)
			if n == "u" then
				local code = tonumber(string.sub(j, i + 2, i + 5), 16)
				if not code or code > 127 then
					return nil -- not in a path or profile name
				end
				table.insert(out, string.char(code))
				i = i + 6
			elseif esc[n] then
				table.insert(out, esc[n])
				i = i + 2
			else
				return nil
			end
		else
			table.insert(out, c)
			i = i + 1
		end
	end
	return nil
end

function iostage_pfs_license(options)
	local spec = options["spank:io-profile"]
	if not set(spec) and slurm.json_cli_options then
		spec = json_string(slurm.json_cli_options(options), "spank:io-profile")
	end
	if not set(spec) then
		return
	end
	local pid, comm = own_process()
	-- A step inside an allocation: the job holds the licenses, a step
	-- cannot take more.
	if comm == "srun" and os.getenv("SLURM_JOB_ID") then
		return
	end
	local cur = options["licenses"]
	local cmd = quote(IOSTAGE) .. " -c " .. quote(IOSTAGE_CONF) ..
		" pfs-license --io-profile " .. quote(spec)
	if set(cur) then
		cmd = cmd .. " --licenses " .. quote(cur)
	end
	if set(options["job-name"]) then
		cmd = cmd .. " --job-name " .. quote(options["job-name"])
	elseif pid then
		cmd = cmd .. " --submitter " .. pid
	end
	-- its errors are the plugin's to report (a bad --io-profile), but not
	-- a program that is not there
	local lines, st = run(cmd .. " 2>/dev/null")
	if cannot_run(st) then
		slurm.log_error("iostage: cannot run %s (exit %d): no PFS license requested; " ..
			"fix IOSTAGE in cli_filter.lua", IOSTAGE, st)
		return
	end
	local out = lines[1]
	if st == 0 and set(out) and out ~= cur then
		options["licenses"] = out
		slurm.log_info("iostage: the job reads from the PFS in place: --licenses=%s", out)
	end
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
	local lines, st = run(quote(IOSTAGE) .. " -c " .. quote(IOSTAGE_CONF) ..
		string.format(" job-note %d %s 2>&1", job_id, t))
	if st ~= 0 then
		slurm.log_error("iostage: job %d is queued but not pre-staged: %s job-note " ..
			"failed (exit %d): %s", job_id, IOSTAGE, st,
			lines[1] or "no message")
	end
end

function slurm_cli_setup_defaults(options, early_pass)
	return slurm.SUCCESS
end

function slurm_cli_pre_submit(options, offset)
	iostage_pfs_license(options)
	return slurm.SUCCESS
end

function slurm_cli_post_submit(offset, job_id, step_id)
	iostage_job_note(job_id)
	return slurm.SUCCESS
end
