// harel console: the only script. It refreshes the live parts of an execution page
// (the statechart, the status, the timers) every 2 seconds and ticks the timers' time
// left; everything else is plain HTML forms.
(function () {
  const live = document.querySelector('[data-live]');
  if (live) {
    const url = live.getAttribute('data-live');
    setInterval(async () => {
      try {
        const r = await fetch(url, { headers: { 'accept': 'text/html' } });
        if (r.ok) {
          live.innerHTML = await r.text();
          const stamp = document.getElementById('refreshed');
          if (stamp) stamp.textContent = 'refreshed ' + new Date().toLocaleTimeString();
        }
      } catch (e) { /* the server is away: try again next tick */ }
    }, 2000);
  }
  setInterval(() => {
    for (const el of document.querySelectorAll('[data-fire-at]')) {
      const left = Number(el.getAttribute('data-fire-at')) - Date.now() / 1000;
      el.textContent = left >= 0 ? 'in ' + Math.round(left) + 's' : 'due ' + Math.round(-left) + 's ago';
    }
  }, 1000);
  // "select all" on the executions page
  const all = document.getElementById('select-all');
  if (all) all.addEventListener('change', () => {
    for (const box of document.querySelectorAll('input[name=ids]')) box.checked = all.checked;
  });
})();
