dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helpers.lua")
local shell = require("xsite.shell")

-- each_line's lines of `script` (sh -c), its end and exit status, with opts
local function lines(script, opts, stop_at)
  local got = {}
  local how, rc = shell.each_line({ "sh", "-c", script }, opts or {}, function(line, cut)
    got[#got + 1] = line .. (cut and "<cut>" or "")
    return stop_at ~= nil and #got >= stop_at
  end)
  return table.concat(got, "|"), how, rc
end

describe("xsite.shell", function()
  it("quotes a word so that sh reads it back unchanged", function()
    for _, w in ipairs({ "plain", "a b", "it's", "$HOME", "", "-x;rm", "a\nb" }) do
      local out = shell.run({ "printf", "%s", w })
      assert.are.equal(w, out)
    end
    assert.are.equal("a/b.c:1,2+3=4@x-y", shell.quote("a/b.c:1,2+3=4@x-y"))
  end)

  it("run gives what a command printed and how it ended", function()
    assert.are.same({ "a\nb\n", true, 0 }, { shell.run({ "printf", "a\\nb\\n" }) })
    assert.are.same({ "a", false, 3 }, { shell.run({ "sh", "-c", "printf a; exit 3" }) })
    assert.are.same({ "x\n", true, 0 }, { shell.run({ "sh", "-c", "echo x; echo y >&2" }, { stderr = "drop" }) })
  end)

  it("each_line hands each line as it comes, the last without its newline too, and the exit status", function()
    assert.are.same({ "a|b||c", "ok", 0 }, { lines("printf 'a\\nb\\n\\nc\\n'") })
    assert.are.same({ "a|b", "failed", 4 }, { lines("printf 'a\\nb'; exit 4") })
    assert.are.same({ "", "ok", 0 }, { lines("true") })
    -- a line that looks like the exit status is a line like any other
    assert.are.same({ "xsite-rc=0|b", "failed", 1 }, { lines("printf 'xsite-rc=0\\nb\\n'; exit 1") })
    -- across reads of 64 KiB
    local text, how = lines("head -c 200000 /dev/zero | tr '\\0' x; echo; echo end")
    assert.are.equal("ok", how)
    assert.are.equal(string.rep("x", 200000) .. "|end", text)
  end)

  it("each_line cuts a line at max_line and stops at max_bytes, whatever the command prints", function()
    local text, how = lines("printf '%s\\n' 12345678 ab 123456789012", { max_line = 5 })
    assert.are.equal("12345<cut>|ab|12345<cut>", text)
    assert.are.equal("ok", how)
    -- a command that never stops printing: read up to the cap, then left
    local got, seen = 0, 0
    how = shell.each_line({ "yes", "0123456789" }, { max_bytes = 1000000 }, function(line)
      got, seen = got + 1, seen + #line + 1
    end)
    assert.are.equal("cut", how)
    assert.is_true(seen <= 1000000 + 65536)
    assert.is_true(got > 1000000 / 11 - 1)
    -- one line without end: cut, in bounded memory
    local before = collectgarbage("count")
    how = shell.each_line({ "sh", "-c", "head -c 50000000 /dev/zero" }, { max_line = 100, max_bytes = 20000000 },
      function() error("no line ends") end)
    assert.are.equal("cut", how)
    assert.is_true(collectgarbage("count") - before < 8 * 1024)
  end)

  it("each_line stops when the function says so", function()
    assert.are.same({ "y|y", "stopped" }, { lines("yes", {}, 2) })
  end)

  it("each_line gives up on a command past its timeout", function()
    local _, how = lines("echo a; sleep 30", { timeout = 1 })
    assert.are.equal("failed", how)
  end)
end)
