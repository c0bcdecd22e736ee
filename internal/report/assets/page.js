// The record browser: filters the embedded sample and shows the first
// matches, each record as a conversation with reasoning, tool calls and
// the token ids with their loss mask folded. Record text is only ever set
// as textContent.
(function () {
  "use strict";
  var records = JSON.parse(document.getElementById("record-data").textContent);
  var shown = 20;
  var el = function (id) { return document.getElementById(id); };

  function node(tag, cls, text) {
    var n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined) n.textContent = text;
    return n;
  }

  function fold(label, text) {
    var d = node("details", "fold");
    d.appendChild(node("summary", "", label));
    d.appendChild(node("pre", "", text));
    return d;
  }

  // The ids a trainer sees, shaded where the loss mask is 1 (the answer,
  // supervised); built when opened, so closed records cost no nodes.
  function tokens(t) {
    var d = node("details", "fold tokens");
    d.appendChild(node("summary", "", "token ids and loss mask (" + ((t.earlier || 0) + t.prompt.length) + " prompt, not supervised; " +
      t.supervised + " answer, supervised)"));
    d.addEventListener("toggle", function () {
      if (!d.open || d.querySelector(".ids")) return;
      var box = node("div", "ids");
      var more = function (text) { box.appendChild(node("span", "more", text)); box.appendChild(document.createTextNode(" ")); };
      var ids = function (list, mask) {
        list.forEach(function (id) {
          var s = node("span", mask ? "sup" : "", String(id));
          s.dataset.mask = mask;
          box.appendChild(s);
          box.appendChild(document.createTextNode(" "));
        });
      };
      if (t.earlier) more("… " + t.earlier + " earlier prompt ids");
      ids(t.prompt, 0);
      if (t.answer) ids(t.answer, 1);
      else more("(" + t.supervised + " supervised ids: the server returned none; handoff tokenizes the answer's text)");
      if (t.later) more("… " + t.later + " more answer ids");
      d.appendChild(box);
    });
    return d;
  }

  function haystack(r) {
    if (r._text === undefined) {
      r._text = r.messages.map(function (m) {
        return [m.content, m.reasoning || "", m.tool_calls || ""].join("\n");
      }).join("\n").toLowerCase() + "\n" + r.key;
    }
    return r._text;
  }

  function matches(r, f) {
    if (f.dataset && r.dataset !== f.dataset) return false;
    if (f.finish && r.finish !== f.finish) return false;
    if (f.min !== null && r.completion_tokens < f.min) return false;
    if (f.max !== null && r.completion_tokens > f.max) return false;
    return !f.text || haystack(r).indexOf(f.text) >= 0;
  }

  function num(id) {
    var v = el(id).value;
    return v === "" ? null : Number(v);
  }

  function render() {
    var f = { dataset: el("f-dataset").value, finish: el("f-finish").value, min: num("f-min"), max: num("f-max"),
      text: el("f-text").value.trim().toLowerCase() };
    var hits = records.filter(function (r) { return matches(r, f); });
    var box = el("records");
    box.textContent = "";
    el("matches").textContent = hits.length + " of " + records.length + " sampled records match" +
      (hits.length > shown ? "; the first " + shown + " are shown" : "");
    hits.slice(0, shown).forEach(function (r) {
      var card = node("div", "record");
      card.dataset.key = r.key;
      var head = node("div", "head");
      head.appendChild(node("b", "", r.dataset));
      head.appendChild(document.createTextNode("  " + r.key + "  finish " + (r.finish || "-") + "  " +
        r.completion_tokens + " completion / " + r.prompt_tokens + " prompt tokens" +
        (r.max_tokens ? "  (max_tokens " + r.max_tokens + ")" : "")));
      card.appendChild(head);
      // One line per record until opened: the answer's start.
      var convo = node("details", "conversation");
      // A search narrowed to a few records shows them whole.
      convo.open = hits.length <= 3;
      var last = r.messages[r.messages.length - 1] || { content: "" };
      convo.appendChild(node("summary", "preview", last.content.slice(0, 200) || "(no text: see the tool calls)"));
      r.messages.forEach(function (m) {
        var msg = node("div", "msg" + (m.answer ? " answer" : ""));
        msg.appendChild(node("span", "role", m.answer ? "assistant (generated)" : m.role));
        if (m.reasoning) msg.appendChild(fold("reasoning (" + m.reasoning.length + " chars)", m.reasoning));
        msg.appendChild(document.createTextNode(m.content));
        if (m.tool_calls) msg.appendChild(fold("tool calls", m.tool_calls));
        convo.appendChild(msg);
      });
      if (r.tokens) convo.appendChild(tokens(r.tokens));
      card.appendChild(convo);
      box.appendChild(card);
    });
  }

  ["f-dataset", "f-finish", "f-min", "f-max", "f-text"].forEach(function (id) {
    el(id).addEventListener("input", render);
  });
  // report.html#q=words opens the browser on a search, for links.
  if (window.location.hash.indexOf("#q=") === 0) {
    el("f-text").value = decodeURIComponent(window.location.hash.slice(3));
  }
  render();

  // A served page refreshes its charts from the server; the browser and
  // its filters stay as they are.
  if (document.body.dataset.live === "true") {
    setInterval(function () {
      var url = new URL(window.location.href);
      url.searchParams.set("part", "charts");
      fetch(url, { cache: "no-store" }).then(function (resp) {
        if (!resp.ok) throw new Error("refresh: HTTP " + resp.status);
        return resp.text();
      }).then(function (html) {
        var open = {};
        document.querySelectorAll("#charts details.section").forEach(function (d) { open[d.id] = d.open; });
        el("charts").innerHTML = html;
        document.querySelectorAll("#charts details.section").forEach(function (d) {
          if (open[d.id] === false) d.open = false;
        });
      }).catch(function (err) { console.warn(err.message); });
    }, 3000);
  }
})();
