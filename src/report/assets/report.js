// The script of migsched's HTML report (src/report/html_report.h): draws the
// charts listed in the embedded JSON (#report-data) with Chart.js, which the
// page inlines before this script. Compiled into the binary
// (cmake/embed_files.cmake); plain ES2017, no modules, no network.
//
// When done it sets data-render-status on <html> to "ok" (every chart drew,
// no script error) or "error" (messages in #render-errors), and
// data-charts-drawn to the number of charts that drew.
(function () {
  'use strict';
  var root = document.documentElement;
  var errors = window.__reportErrors || [];
  var statusEl = document.getElementById('render-status');
  var errorsEl = document.getElementById('render-errors');
  var drawn = 0;
  var data = null;

  var RUN_COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2',
                    '#7f7f7f', '#bcbd22', '#17becf'];
  var PROFILE_COLORS = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948',
                        '#b07aa1', '#ff9da7', '#9c755f', '#86bcb6', '#d37295', '#a0cbe8'];

  function runColor(i) { return RUN_COLORS[i % RUN_COLORS.length]; }

  // ---- formatting -------------------------------------------------------
  // A time unit for values up to maxSeconds: [divisor, name].
  function timeUnit(maxSeconds) {
    if (maxSeconds > 3 * 86400) return [86400, 'd'];
    if (maxSeconds > 2 * 3600) return [3600, 'h'];
    if (maxSeconds > 120) return [60, 'min'];
    return [1, 's'];
  }
  function fmtSeconds(s) {
    if (s === null || !isFinite(s)) return '-';
    var u = timeUnit(Math.abs(s));
    return (s / u[0]).toFixed(u[1] === 's' || u[1] === 'min' ? 1 : 2) + ' ' + u[1];
  }
  function fmtValue(v, format) {
    if (v === null || v === undefined || !isFinite(v)) return '-';
    switch (format) {
      case 'duration': return fmtSeconds(v);
      case 'percent': return (100 * v).toFixed(1) + '%';
      case 'rate': return v.toFixed(3);
      case 'count': return v.toFixed(0);
      default: return v.toFixed(1);
    }
  }

  // A tick value, short: "0.005", "0.5", "20", "1k", "2M".
  function fmtTick(v) {
    if (v >= 1e6) return +(v / 1e6).toPrecision(3) + 'M';
    if (v >= 1e3) return +(v / 1e3).toPrecision(3) + 'k';
    return String(+v.toPrecision(3));
  }

  // ---- page structure ---------------------------------------------------
  // A <figure> with a caption and a sized canvas in the section's container.
  function newCanvas(spec, caption, heightPx) {
    var box = document.querySelector('div[data-section="' + spec.section + '"]');
    if (!box) throw new Error('no container for section ' + spec.section);
    if (spec.group !== undefined) {  // a titled sub-grid per group (e.g. per run)
      var sub = box.querySelector('div[data-group="' + spec.group + '"]');
      if (!sub) {
        var h = document.createElement('h3');
        h.textContent = spec.group_title;
        box.appendChild(h);
        sub = document.createElement('div');
        sub.className = 'charts charts-' + spec.section;
        sub.setAttribute('data-group', String(spec.group));
        box.appendChild(sub);
      }
      box = sub;
    }
    if (spec.row !== undefined) {  // charts side by side in a row (a snapshot's GPU models)
      var row = box.querySelector('div[data-row="' + spec.row + '"]');
      if (!row) {
        row = document.createElement('div');
        row.className = 'slot-row';
        row.setAttribute('data-row', String(spec.row));
        box.appendChild(row);
      }
      box = row;
    }
    var fig = document.createElement('figure');
    fig.className = 'chart chart-' + spec.kind;
    var cap = document.createElement('figcaption');
    cap.textContent = caption;
    fig.appendChild(cap);
    var holder = document.createElement('div');
    holder.className = 'canvas-holder';
    holder.style.height = heightPx + 'px';
    var canvas = document.createElement('canvas');
    holder.appendChild(canvas);
    fig.appendChild(holder);
    box.appendChild(fig);
    return canvas;
  }

  function baseOptions() {
    return {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      interaction: {mode: 'nearest', intersect: false},
      plugins: {legend: {position: 'bottom', labels: {boxWidth: 14}}},
      scales: {}
    };
  }
  function axisTitle(text) { return {display: true, text: text}; }

  // ---- over time --------------------------------------------------------
  function drawTimeline(spec) {
    var maxT = 0, windowS = 0;
    data.runs.forEach(function (r) {
      if (!r.timeline) return;
      var t = r.timeline.time_s;
      if (t.length) maxT = Math.max(maxT, t[t.length - 1]);
      windowS = Math.max(windowS, r.timeline.window_s || 0);
    });
    var unit = timeUnit(maxT);
    var scale = spec.field === 'utilization' ? 100 : 1;
    var datasets = [];
    data.runs.forEach(function (r, i) {
      if (!r.timeline) return;
      var t = r.timeline.time_s, v = r.timeline[spec.field];
      var pts = new Array(t.length);
      for (var k = 0; k < t.length; ++k) pts[k] = {x: t[k] / unit[0], y: v[k] * scale};
      datasets.push({label: r.label, data: pts, borderColor: runColor(i),
                     backgroundColor: runColor(i), stepped: true, pointRadius: 0,
                     borderWidth: 1.5, fill: false});
    });
    var caption = spec.title + (windowS > 0 ? ' — means over windows of ' + fmtSeconds(windowS) : '');
    var opts = baseOptions();
    opts.scales.x = {type: 'linear', min: 0, title: axisTitle('time (' + unit[1] + ')')};
    var y = {type: 'linear', beginAtZero: true};
    if (spec.field === 'utilization') { y.max = 100; y.title = axisTitle('% of compute slices busy'); }
    if (spec.field === 'frag_rate') y.title = axisTitle('fragmentation rate');
    if (spec.field === 'queue_length') y.title = axisTitle('jobs waiting');
    opts.scales.y = y;
    return new Chart(newCanvas(spec, caption, 300), {type: 'line', data: {datasets: datasets},
                                                    options: opts});
  }

  // ---- JCT distribution -------------------------------------------------
  function drawCdf(spec) {
    var minJ = Infinity, maxJ = 0;
    data.runs.forEach(function (r) {
      if (!r.jct_cdf || !r.jct_cdf.jct_s.length) return;
      var j = r.jct_cdf.jct_s;
      minJ = Math.min(minJ, j[0]);
      maxJ = Math.max(maxJ, j[j.length - 1]);
    });
    var unit = timeUnit(maxJ);
    var log = minJ > 0 && maxJ / minJ > 100;
    var datasets = [];
    data.runs.forEach(function (r, i) {
      if (!r.jct_cdf) return;
      var j = r.jct_cdf.jct_s, f = r.jct_cdf.fraction;
      var pts = new Array(j.length);
      for (var k = 0; k < j.length; ++k) pts[k] = {x: j[k] / unit[0], y: 100 * f[k]};
      datasets.push({label: r.label + ' (' + r.jct_cdf.jobs + ' jobs)', data: pts,
                     borderColor: runColor(i), backgroundColor: runColor(i), stepped: true,
                     pointRadius: 0, borderWidth: 1.5, fill: false});
    });
    var opts = baseOptions();
    opts.scales.x = {type: log ? 'logarithmic' : 'linear',
                     title: axisTitle('JCT (' + unit[1] + ')' + (log ? ', log scale' : ''))};
    if (log) {
      // Ticks at 1, 2 and 5 times a power of ten only, written short
      // ("0.01", "0.5", "20", "1k"); Chart.js's own would print every minor
      // tick with four decimals, overlapping.
      opts.scales.x.ticks = {autoSkip: true, maxRotation: 0, callback: function (v) {
        var e = Math.floor(Math.log10(v) + 1e-9), m = v / Math.pow(10, e);
        if (!(Math.abs(m - 1) < 1e-6 || Math.abs(m - 2) < 1e-6 || Math.abs(m - 5) < 1e-6)) return '';
        return fmtTick(v);
      }};
    }
    opts.scales.y = {type: 'linear', min: 0, max: 100, title: axisTitle('% of completed jobs')};
    return new Chart(newCanvas(spec, spec.title, 320), {type: 'line', data: {datasets: datasets},
                                                       options: opts});
  }

  // ---- slot maps --------------------------------------------------------
  var patternCache = {};
  // Diagonal hatching in `color` on white: an idle instance.
  function hatch(color) {
    if (patternCache[color]) return patternCache[color];
    var c = document.createElement('canvas');
    c.width = 8; c.height = 8;
    var g = c.getContext('2d');
    g.fillStyle = '#ffffff';
    g.fillRect(0, 0, 8, 8);
    g.strokeStyle = color;
    g.lineWidth = 2;
    g.beginPath();
    g.moveTo(0, 8); g.lineTo(8, 0);
    g.moveTo(-2, 2); g.lineTo(2, -2);
    g.moveTo(6, 10); g.lineTo(10, 6);
    g.stroke();
    patternCache[color] = g.createPattern(c, 'repeat');
    return patternCache[color];
  }
  // Profiles in size order; one colour each.
  var profileColor = {};
  function assignProfileColors() {
    var names = {};
    data.runs.forEach(function (r) {
      (r.snapshots || []).forEach(function (s) {
        s.gpus.forEach(function (g) {
          g.instances.forEach(function (inst) { names[inst.profile] = true; });
        });
      });
    });
    var list = Object.keys(names);
    // By size, as the tables (sim/metrics.h ProfileKeyLess): compute slices,
    // then memory ("3g.20gb" -> 3, 20), then the name.
    function size(n) {
      var m = /^(\d+)g\.(\d+)gb/.exec(n);
      return m ? [parseInt(m[1], 10), parseInt(m[2], 10)] : [Infinity, Infinity];
    }
    list.sort(function (a, b) {
      var sa = size(a), sb = size(b);
      if (sa[0] !== sb[0]) return sa[0] - sb[0];
      if (sa[1] !== sb[1]) return sa[1] - sb[1];
      return a < b ? -1 : a > b ? 1 : 0;
    });
    list.forEach(function (n, i) { profileColor[n] = PROFILE_COLORS[i % PROFILE_COLORS.length]; });
    return list;
  }
  var profileOrder = [];

  // Black or white, whichever reads better on the colour '#rrggbb'.
  function textOn(color) {
    var r = parseInt(color.substr(1, 2), 16), g = parseInt(color.substr(3, 2), 16),
        b = parseInt(color.substr(5, 2), 16);
    return 0.299 * r + 0.587 * g + 0.114 * b > 160 ? '#222222' : '#ffffff';
  }

  // A Chart.js plugin writing each instance's profile name inside its box
  // when it fits.
  var profileLabels = {
    id: 'migschedProfileLabels',
    afterDatasetsDraw: function (chart) {
      var ctx = chart.ctx;
      ctx.save();
      ctx.font = '11px ' + Chart.defaults.font.family;
      ctx.textAlign = 'center';
      ctx.textBaseline = 'middle';
      chart.data.datasets.forEach(function (ds, i) {
        if (!chart.isDatasetVisible(i)) return;
        chart.getDatasetMeta(i).data.forEach(function (bar, k) {
          var p = bar.getProps(['x', 'y', 'base', 'height'], true);
          var width = Math.abs(p.x - p.base);
          var text = ds.data[k].profile;
          if (ctx.measureText(text).width + 6 > width || p.height < 11) return;
          var busy = ds.data[k].busy;
          ctx.fillStyle = busy ? textOn(profileColor[ds.label]) : '#222222';
          if (!busy) {  // a light backing so that the name reads over the hatching
            var tw = ctx.measureText(text).width + 4;
            ctx.fillStyle = 'rgba(255,255,255,0.85)';
            ctx.fillRect((p.x + p.base) / 2 - tw / 2, p.y - 7, tw, 14);
            ctx.fillStyle = '#222222';
          }
          ctx.fillText(text, (p.x + p.base) / 2, p.y);
        });
      });
      ctx.restore();
    }
  };

  function drawSlotMap(spec) {
    var run = data.runs[spec.run];
    var snap = run.snapshots[spec.snapshot];
    // One chart per GPU model (spec.model): its own placement grid and axis.
    var models = {};
    snap.gpus.forEach(function (g) { models[g.model] = true; });
    var mixed = Object.keys(models).length > 1;
    var gpus = [];
    snap.gpus.forEach(function (g, i) {
      if (spec.model === undefined || g.model === spec.model) gpus.push({index: i, gpu: g});
    });
    var labels = gpus.map(function (e) { return 'GPU ' + e.index; });
    var units = 1;
    var byProfile = {};
    var anyIdle = false;
    gpus.forEach(function (e, row) {
      units = Math.max(units, e.gpu.placement_units);
      e.gpu.instances.forEach(function (inst) {
        if (!inst.busy) anyIdle = true;
        (byProfile[inst.profile] = byProfile[inst.profile] || []).push({
          x: [inst.start, inst.start + inst.size], y: labels[row], gpu: e.index, row: row,
          start: inst.start, size: inst.size, busy: inst.busy, job: inst.job,
          profile: inst.profile});
      });
    });
    var datasets = profileOrder.filter(function (p) { return byProfile[p]; }).map(function (p) {
      var color = profileColor[p];
      return {label: p, data: byProfile[p],
              backgroundColor: byProfile[p].map(function (d) { return d.busy ? color : hatch(color); }),
              borderColor: '#333333', borderWidth: 1, borderSkipped: false, grouped: false,
              barPercentage: 0.92, categoryPercentage: 0.92};
    });
    var opts = baseOptions();
    opts.indexAxis = 'y';
    opts.interaction = {mode: 'nearest', intersect: true};
    opts.scales.x = {type: 'linear', min: 0, max: units, ticks: {stepSize: 1},
                     title: axisTitle('placement unit' + (spec.model ? ' of ' + spec.model : ''))};
    opts.scales.y = {type: 'category', labels: labels, grid: {display: false},
                     ticks: {autoSkip: false}};
    opts.plugins.tooltip = {callbacks: {
      title: function (items) {
        return items.length ? labels[items[0].raw.row] + (spec.model ? ' (' + spec.model + ')' : '')
                            : '';
      },
      label: function (item) {
        var d = item.raw;
        return d.profile + ' @' + d.start + ' (size ' + d.size + '): ' +
               (d.busy ? 'job ' + d.job : 'idle');
      }
    }};
    opts.plugins.legend.labels.generateLabels = function (chart) {
      var items = chart.data.datasets.map(function (ds, i) {
        var color = profileColor[ds.label];
        return {text: ds.label, fillStyle: color, strokeStyle: '#333333', lineWidth: 1,
                hidden: !chart.isDatasetVisible(i), datasetIndex: i};
      });
      if (anyIdle) {
        items.push({text: 'idle (hatched)', fillStyle: hatch('#555555'), strokeStyle: '#333333',
                    lineWidth: 1, hidden: false});
      }
      return items;
    };
    opts.plugins.legend.onClick = function (e, item, legend) {
      if (item.datasetIndex === undefined) return;
      Chart.defaults.plugins.legend.onClick.call(this, e, item, legend);
    };
    var when = 't = ' + fmtSeconds(snap.time_s) +
               (snap.peak_fragmentation ? ' (peak fragmentation)' : '');
    var caption = (mixed ? spec.model + ' — ' : '') + when + ' — cluster fragmentation ' +
                  fmtValue(snap.frag_rate, 'rate') + ', utilisation ' +
                  fmtValue(snap.utilization, 'percent');
    var height = Math.max(150, 100 + 26 * gpus.length);
    return new Chart(newCanvas(spec, caption, height),
                     {type: 'bar', data: {labels: labels, datasets: datasets}, options: opts,
                      plugins: [profileLabels]});
  }

  // ---- fill mode --------------------------------------------------------
  function drawFill(spec) {
    var datasets = [];
    var pct = spec.field === 'allocation';
    data.runs.forEach(function (r, i) {
      if (!r.fill_curve) return;
      datasets.push({label: r.label, borderColor: runColor(i), backgroundColor: runColor(i),
                     pointRadius: 2, borderWidth: 1.5, fill: false,
                     data: r.fill_curve.map(function (p) {
                       return {x: 100 * p.requested_share, y: pct ? 100 * p[spec.field] : p[spec.field]};
                     })});
    });
    var opts = baseOptions();
    opts.scales.x = {type: 'linear', title: axisTitle('requested load (% of compute slices)')};
    opts.scales.y = {type: 'linear', beginAtZero: true,
                     title: axisTitle(pct ? '% of compute slices busy' : 'fragmentation rate')};
    return new Chart(newCanvas(spec, spec.title, 300), {type: 'line', data: {datasets: datasets},
                                                       options: opts});
  }

  // ---- 95% intervals -----------------------------------------------------
  // A Chart.js plugin drawing each point's 95% interval as a whisker: a
  // dataset's `intervals` holds [low, high] (in the axis's unit) or null per
  // point. chart.$intervalsDrawn counts the whiskers drawn (for the test).
  var intervalWhiskers = {
    id: 'migschedIntervals',
    afterDatasetsDraw: function (chart) {
      var ctx = chart.ctx, y = chart.scales.y, drawnHere = 0;
      ctx.save();
      ctx.strokeStyle = '#222222';
      ctx.lineWidth = 1.5;
      chart.data.datasets.forEach(function (ds, i) {
        if (!ds.intervals || !chart.isDatasetVisible(i)) return;
        chart.getDatasetMeta(i).data.forEach(function (el, k) {
          var iv = ds.intervals[k];
          if (!iv || !isFinite(iv[0]) || !isFinite(iv[1])) return;
          // Clipped to the drawing area: an interval reaching below zero (few
          // replicas, a wide interval) ends at the axis, with no cap there.
          var area = chart.chartArea, x = el.x;
          var lo = y.getPixelForValue(iv[0]), hi = y.getPixelForValue(iv[1]);
          var loCut = lo > area.bottom, hiCut = hi < area.top;
          lo = Math.min(lo, area.bottom);
          hi = Math.max(hi, area.top);
          ctx.beginPath();
          ctx.moveTo(x, lo); ctx.lineTo(x, hi);
          if (!loCut) { ctx.moveTo(x - 5, lo); ctx.lineTo(x + 5, lo); }
          if (!hiCut) { ctx.moveTo(x - 5, hi); ctx.lineTo(x + 5, hi); }
          ctx.stroke();
          ++drawnHere;
        });
      });
      ctx.restore();
      chart.$intervalsDrawn = drawnHere;
    }
  };

  // A value in a unit chosen by the report (report_data.h DisplayUnit).
  function fmtUnit(v, unit) {
    if (v === null || v === undefined || !isFinite(v)) return '-';
    return (v / unit.divisor).toFixed(unit.decimals) + unit.suffix;
  }
  // The y scale of a chart of values that are compared: from zero (a bar or
  // a point is read against zero, so no difference looks larger than it is),
  // up to the highest interval end.
  function zeroBasedY(points, intervals, unit) {
    var top = 0, bottom = 0;  // a negative value (a metric the report does not know) is kept
    points.forEach(function (v, i) {
      if (v !== null && isFinite(v)) { top = Math.max(top, v); bottom = Math.min(bottom, v); }
      var iv = intervals[i];
      if (iv && isFinite(iv[1])) top = Math.max(top, iv[1]);
      if (iv && isFinite(iv[0]) && iv[0] < 0 && bottom < 0) bottom = Math.min(bottom, iv[0]);
    });
    var y = {type: 'linear', beginAtZero: true, suggestedMax: top > 0 ? top * 1.05 : 1};
    if (bottom === 0) y.min = 0;
    if (unit.name) y.title = axisTitle(unit.name);
    return y;
  }

  // ---- key metrics per run ---------------------------------------------
  function drawBars(spec) {
    var unit = spec.unit;
    var vals = spec.values.map(function (v) { return v === null ? null : v / unit.divisor; });
    var intervals = spec.values.map(function (v, i) {
      var h = spec.halves[i];
      return v === null || h === null ? null : [(v - h) / unit.divisor, (v + h) / unit.divisor];
    });
    var opts = baseOptions();
    opts.plugins.legend.display = false;
    opts.interaction = {mode: 'index', intersect: false};
    opts.scales.x = {type: 'category', ticks: {autoSkip: false, maxRotation: 30}};
    opts.scales.y = zeroBasedY(vals, intervals, unit);
    opts.plugins.tooltip = {callbacks: {label: function (item) {
      var v = spec.values[item.dataIndex], h = spec.halves[item.dataIndex];
      return fmtUnit(v, unit) + (h !== null ? ' ±' + (h / unit.divisor).toFixed(unit.decimals) : '');
    }}};
    var colors = spec.labels.map(function (l, i) { return runColor(i); });
    return new Chart(newCanvas(spec, spec.title + ' (' + spec.better + ' is better)', 200), {
      type: 'bar',
      data: {labels: spec.labels,
             datasets: [{label: spec.title, data: vals, backgroundColor: colors,
                         borderColor: colors, intervals: intervals, maxBarThickness: 60}]},
      options: opts, plugins: [intervalWhiskers]});
  }

  // ---- sweep ------------------------------------------------------------
  function drawSweep(spec) {
    var sw = data.sweep, unit = spec.unit;
    var vals = sw.metrics.map(function (m) {
      var v = m[spec.metric];
      return typeof v === 'number' ? v / unit.divisor : null;
    });
    var intervals = sw.metrics.map(function (m, i) {
      var h = m.ci95 && typeof m.ci95[spec.metric] === 'number' ? m.ci95[spec.metric] : null;
      if (h === null || vals[i] === null) return null;
      return [vals[i] - h / unit.divisor, vals[i] + h / unit.divisor];
    });
    var pts = sw.values.map(function (x, i) { return {x: x, y: vals[i]}; });
    var opts = baseOptions();
    opts.plugins.legend.display = false;
    opts.scales.x = {type: 'linear', title: axisTitle(sw.param)};
    // The metric's name is the caption; the axis says only the unit (a long
    // name written along a short axis would be cut off).
    opts.scales.y = zeroBasedY(vals, intervals, unit);
    return new Chart(newCanvas(spec, spec.title + ' — ' + sw.label, 220), {
      type: 'line',
      data: {datasets: [{label: spec.title, data: pts, borderColor: runColor(0),
                         backgroundColor: runColor(0), pointRadius: 3, borderWidth: 1.5,
                         intervals: intervals}]},
      options: opts, plugins: [intervalWhiskers]});
  }

  // Axis titles longer than the chart is high (a y title) or wide (an x
  // title): they would be cut off at the canvas edge.
  function cutTitles(chart) {
    var cut = [];
    Object.keys(chart.scales).forEach(function (id) {
      var scale = chart.scales[id], title = scale.options.title;
      if (!title || !title.display || !title.text) return;
      var ctx = chart.ctx;
      ctx.save();
      ctx.font = Chart.helpers.toFont(title.font).string;
      var width = ctx.measureText(String(title.text)).width;
      ctx.restore();
      var room = scale.isHorizontal() ? chart.width : chart.height;
      if (width > room) cut.push(String(title.text));
    });
    return cut;
  }

  var DRAW = {timeline: drawTimeline, cdf: drawCdf, slotmap: drawSlotMap, fill: drawFill,
              sweep: drawSweep, bars: drawBars};

  // Where each chart landed on the page (CSS pixels from the top of the
  // document), for the browser test: what a reader sees on the first screen.
  function recordPositions() {
    var figs = document.querySelectorAll('figure.chart');
    for (var i = 0; i < figs.length; ++i) {
      var rect = figs[i].getBoundingClientRect();
      figs[i].setAttribute('data-top', String(Math.round(rect.top + window.scrollY)));
      figs[i].setAttribute('data-bottom', String(Math.round(rect.bottom + window.scrollY)));
    }
    root.setAttribute('data-page-height', String(document.documentElement.scrollHeight));
  }

  function finish() {
    var expected = data ? data.charts.length : -1;
    root.setAttribute('data-charts-drawn', String(drawn));
    try { recordPositions(); } catch (e) { errors.push('positions: ' + e.message); }
    if (errors.length === 0 && drawn === expected) {
      root.setAttribute('data-render-status', 'ok');
      statusEl.hidden = true;  // nothing to say: every chart is there
    } else {
      if (errors.length === 0) errors.push(drawn + ' of ' + expected + ' charts drew');
      root.setAttribute('data-render-status', 'error');
      statusEl.textContent = 'Some charts could not be drawn (' + drawn + ' of ' + expected + '):';
      statusEl.className = 'status error';
      errorsEl.hidden = false;
      errorsEl.textContent = errors.join('\n');
    }
    // Errors after this point (e.g. from a tooltip) are still shown.
    window.addEventListener('error', function (e) {
      root.setAttribute('data-render-status', 'error');
      errorsEl.hidden = false;
      errorsEl.textContent += (errorsEl.textContent ? '\n' : '') + e.message;
    });
  }

  try {
    data = JSON.parse(document.getElementById('report-data').textContent);
    if (typeof Chart === 'undefined') throw new Error('the charting library (Chart.js) did not load');
    document.getElementById('chartjs-version').textContent = Chart.version;
    Chart.defaults.font.family = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
    Chart.defaults.color = '#333333';
    profileOrder = assignProfileColors();
    data.charts.forEach(function (spec, i) {
      try {
        var draw = DRAW[spec.kind];
        if (!draw) throw new Error('unknown chart kind ' + spec.kind);
        var chart = draw(spec);
        var area = chart.chartArea;
        if (!area || !(area.right > area.left) || !(area.bottom > area.top)) {
          throw new Error('it has no drawing area');
        }
        // What was drawn, for the browser test: the x axis's range and tick
        // labels, and a slot map's model.
        var fig = chart.canvas.closest('figure');
        var x = chart.scales.x;
        if (fig && x) {
          fig.setAttribute('data-x-max', String(x.max));
          fig.setAttribute('data-x-ticks', JSON.stringify(x.ticks.map(function (t) {
            return Array.isArray(t.label) ? t.label.join(' ') : String(t.label);
          }).filter(function (l) { return l !== '' && l !== 'undefined'; })));
        }
        if (fig && spec.model) fig.setAttribute('data-model', spec.model);
        var y = chart.scales.y;
        if (fig && y) fig.setAttribute('data-y-min', String(y.min));
        if (fig && chart.$intervalsDrawn !== undefined) {
          fig.setAttribute('data-intervals', String(chart.$intervalsDrawn));
        }
        if (fig) fig.setAttribute('data-cut-labels', JSON.stringify(cutTitles(chart)));
        ++drawn;
      } catch (e) {
        errors.push('chart ' + (i + 1) + ' (' + spec.kind + ', ' + spec.title + '): ' +
                    (e && e.message ? e.message : String(e)));
      }
    });
  } catch (e) {
    errors.push(e && e.message ? e.message : String(e));
  }
  finish();
})();
