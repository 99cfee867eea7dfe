--- Line charts as standalone SVG: axes with ticks and units, a title, and each
-- line labelled at its right end, so nobody has to hunt for a legend.
-- @module xsite.svg

local M = {}

local COLORS = { "#1b6ca8", "#d1495b", "#2e8b57", "#edae49", "#6a4c93", "#00798c", "#8c564b", "#444444" }

local function esc(s)
  return (tostring(s):gsub("[&<>\"]", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;" }))
end

local function fmt(v)
  return string.format("%.1f", v)
end

-- "Nice" tick step for a range: 1, 2 or 5 times a power of ten.
local function tick_step(range, count)
  local raw = range / count
  local mag = 10 ^ math.floor(math.log(raw) / math.log(10))
  for _, m in ipairs({ 1, 2, 5, 10 }) do
    if raw <= m * mag then return m * mag end
  end
  return 10 * mag
end

local function label_number(v)
  if math.abs(v) >= 1000 or v == math.floor(v) then return string.format("%d", math.floor(v + 0.5)) end
  return (string.format("%.2g", v))
end

--- Draw a line chart.
-- @param c a table: `title`, `xlabel`, `ylabel`, `series` (array of
--   `{ label, points = {{x, y}, …}, dashed = bool }`), optional `width`, `height`
-- @return the SVG document as a string
function M.line_chart(c)
  local W, H = c.width or 760, c.height or 460
  local left, right, top, bottom = 70, 190, 50, 60
  local pw, ph = W - left - right, H - top - bottom
  local xmin, xmax, ymax = math.huge, -math.huge, 0
  -- points that cannot be drawn (NaN, infinities) are left out
  local function finite(v) return v == v and v ~= math.huge and v ~= -math.huge end
  local series = {}
  for i, s in ipairs(c.series) do
    local kept = {}
    for _, p in ipairs(s.points) do
      if finite(p[1]) and finite(p[2]) then kept[#kept + 1] = p end
    end
    series[i] = { label = s.label, points = kept, dashed = s.dashed }
  end
  for _, s in ipairs(series) do
    for _, p in ipairs(s.points) do
      if p[1] < xmin then xmin = p[1] end
      if p[1] > xmax then xmax = p[1] end
      if p[2] > ymax then ymax = p[2] end
    end
  end
  if xmin == math.huge then xmin, xmax = 0, 1 end
  if xmax == xmin then xmax = xmin + 1 end
  xmin = math.min(xmin, 0)
  if ymax <= 0 then ymax = 1 end
  local ystep = tick_step(ymax, 6)
  ymax = math.ceil(ymax / ystep) * ystep
  local xstep = tick_step(xmax - xmin, 8)
  local function X(v) return left + (v - xmin) / (xmax - xmin) * pw end
  local function Y(v) return top + ph - v / ymax * ph end

  local o = {}
  local function add(s, ...) o[#o + 1] = string.format(s, ...) end
  add('<?xml version="1.0" encoding="UTF-8"?>')
  add('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" ' ..
    'font-family="sans-serif" font-size="12">', W, H, W, H)
  add('<title>%s</title>', esc(c.title or "chart"))
  add('<rect x="0" y="0" width="%d" height="%d" fill="white"/>', W, H)
  add('<text x="%s" y="24" font-size="16" font-weight="bold" text-anchor="middle">%s</text>',
    fmt(left + pw / 2), esc(c.title or ""))
  -- grid and ticks
  local v = 0
  while v <= ymax + ystep / 2 do
    add('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#dddddd"/>', fmt(left), fmt(Y(v)), fmt(left + pw), fmt(Y(v)))
    add('<text x="%s" y="%s" text-anchor="end">%s</text>', fmt(left - 6), fmt(Y(v) + 4), label_number(v))
    v = v + ystep
  end
  v = math.ceil(xmin / xstep) * xstep
  while v <= xmax + xstep / 2 do
    add('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#888888"/>',
      fmt(X(v)), fmt(top + ph), fmt(X(v)), fmt(top + ph + 5))
    add('<text x="%s" y="%s" text-anchor="middle">%s</text>', fmt(X(v)), fmt(top + ph + 18), label_number(v))
    v = v + xstep
  end
  add('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>', left, top + ph, left + pw, top + ph)
  add('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>', left, top, left, top + ph)
  add('<text x="%s" y="%d" text-anchor="middle">%s</text>', fmt(left + pw / 2), H - 15, esc(c.xlabel or ""))
  add('<text x="18" y="%s" text-anchor="middle" transform="rotate(-90 18 %s)">%s</text>',
    fmt(top + ph / 2), fmt(top + ph / 2), esc(c.ylabel or ""))
  -- lines, labelled at their right end; labels pushed apart to stay readable
  local labels = {}
  for i, s in ipairs(series) do
    local color = COLORS[(i - 1) % #COLORS + 1]
    local pts = {}
    for _, p in ipairs(s.points) do pts[#pts + 1] = fmt(X(p[1])) .. "," .. fmt(Y(p[2])) end
    if #pts > 0 then
      add('<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>', color,
        s.dashed and ' stroke-dasharray="6,4"' or "", table.concat(pts, " "))
      local last = s.points[#s.points]
      labels[#labels + 1] = { y = Y(last[2]), x = X(last[1]), text = s.label, color = color }
    end
  end
  table.sort(labels, function(a, b) return a.y < b.y end)
  for i = 2, #labels do
    if labels[i].y - labels[i - 1].y < 14 then labels[i].y = labels[i - 1].y + 14 end
  end
  for _, l in ipairs(labels) do
    add('<text x="%s" y="%s" fill="%s">%s</text>', fmt(left + pw + 8), fmt(l.y + 4), l.color, esc(l.text))
  end
  add("</svg>")
  return table.concat(o, "\n") .. "\n"
end

return M
