-- luacheck configuration of xsite: `luacheck lua tests/lua`
std = "max"
max_line_length = 120
files["lua/job_submit.lua"] = {
  -- job_submit/lua provides `slurm` and calls these two globals
  read_globals = { "slurm" },
  globals = { "slurm_job_submit", "slurm_job_modify" },
}
files["tests/lua"] = { std = "max+busted" }
