// skillsight web UI: keyboard navigation and small conveniences. Pages work without it.
(function () {
  "use strict";
  const typing = (el) => el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  const rows = () => Array.from(document.querySelectorAll("[data-nav-list] [data-nav]"))
    .filter((el) => el.offsetParent !== null);
  let current = -1;

  function select(index) {
    const all = rows();
    if (!all.length) return;
    current = Math.max(0, Math.min(index, all.length - 1));
    all.forEach((el, i) => {
      el.classList.toggle("is-selected", i === current);
      if (i === current) el.setAttribute("aria-selected", "true"); else el.removeAttribute("aria-selected");
    });
    all[current].scrollIntoView({ block: "nearest" });
  }

  function open() {
    const row = rows()[current];
    if (!row) return;
    const details = row.querySelector("details");
    const link = row.querySelector("a[href]");
    if (details && !link) { details.open = !details.open; return; }
    if (link) link.click(); else if (details) details.open = !details.open;
  }

  function search() {
    const box = document.querySelector("[data-search]") || document.getElementById("go-box");
    if (box) { box.focus(); if (box.select) box.select(); }
  }

  function help() {
    const dialog = document.getElementById("help");
    if (!dialog) return;
    if (dialog.open) dialog.close(); else dialog.showModal();
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    switch (event.key) {
      case "j": select(current + 1); break;
      case "k": select(current < 0 ? 0 : current - 1); break;
      case "Enter": if (current < 0) return; open(); break;
      case "/": search(); break;
      case "?": help(); break;
      default: return;
    }
    event.preventDefault();
  });

  document.addEventListener("DOMContentLoaded", () => {
    document.querySelectorAll("[data-help-open]").forEach((b) => b.addEventListener("click", help));
    document.querySelectorAll("select[data-autosubmit]").forEach((s) =>
      s.addEventListener("change", () => s.form && s.form.requestSubmit()));
    document.querySelectorAll("[data-expand-all],[data-collapse-all]").forEach((b) =>
      b.addEventListener("click", () => {
        const openAll = b.hasAttribute("data-expand-all");
        document.querySelectorAll(".steps details").forEach((d) => { d.open = openAll; });
      }));
    // parts of a page that cost more to compute arrive after it
    document.querySelectorAll("[data-fragment]").forEach(async (box) => {
      const response = await fetch(box.dataset.fragment, { credentials: "same-origin" });
      if (response.ok) box.innerHTML = await response.text();
    });
    // a row clicked becomes the selected one, so j/k continue from there
    rows().forEach((row, i) => row.addEventListener("click", () => select(i)));
    // inline status forms: post without leaving the page, then show the new status
    document.querySelectorAll("form[data-inline]").forEach((form) => {
      form.addEventListener("submit", async (event) => {
        if (!form.hasAttribute("data-inline")) return;  // a plain form post
        event.preventDefault();
        const button = event.submitter;
        const body = new URLSearchParams(new FormData(form, button));
        const response = await fetch(form.action, {
          method: "POST", body, headers: { "accept": "application/json" }, credentials: "same-origin",
        });
        if (!response.ok) { form.querySelector("[data-inline-status]").textContent = "failed (" + response.status + ")"; return; }
        const done = await response.json();
        const badge = document.querySelector('[data-status-of="' + form.dataset.cluster + '"]');
        if (badge) { badge.textContent = done.status; badge.className = "verdict st-" + done.status; }
        const note = form.querySelector("[data-inline-status]");
        if (note) note.textContent = "saved";
      });
    });
  });
})();
