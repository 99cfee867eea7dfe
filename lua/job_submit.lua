--[[
job_submit.lua: xsite's placement policy for Slurm's job_submit/lua plugin.

Install beside slurm.conf, with xsite.conf beside it, and set
JobSubmitPlugins=lua in slurm.conf.  Everything happens in the xsite Lua
library (xsite.submit, xsite.policy); this file only connects slurmctld to it.
The library must be on Lua's path of slurmctld: it is when installed under
/usr or /usr/local; otherwise set LUA_PATH in slurmctld's environment.
See xsite.conf(5) and docs/admin-guide.md.
--]]

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local ok, xsite = pcall(require, "xsite.submit")

if ok then
  local conf = os.getenv("XSITE_CONF")
  xsite.setup(conf and conf ~= "" and conf or here .. "/xsite.conf",
    { slurm_conf = here .. "/slurm.conf" })
else
  slurm.log_error("xsite: cannot load the xsite Lua library (%s); jobs are accepted unchanged",
    tostring(xsite))
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  if not ok then return slurm.SUCCESS end
  return xsite.job_submit(job_desc, slurm, submit_uid, part_list)
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  if not ok then return slurm.SUCCESS end
  return xsite.job_modify(job_desc, job_rec, slurm, modify_uid, part_list)
end
