/// The status page's style sheet, inline: system fonts, light and dark palettes chosen by
/// `prefers-color-scheme` with text contrast of at least 4.5:1 (WCAG 2.1 AA), tables that scroll
/// sideways on a phone instead of squeezing, tabular digits so numbers do not jump on reload.
enum StatusPageStyle {
    static let css = """
        :root { --bg: #ffffff; --fg: #1a1a1a; --muted: #555555; --line: #d0d0d0; --head: #f2f2f2;
          --bar: #1f6feb; --track: #e3e3e3; --ok-bg: #dcf5e3; --ok-fg: #0f5323; --bad-bg: #fde2e1; --bad-fg: #8a1111;
          --wait-bg: #fff1cc; --wait-fg: #6b4a00; --info-bg: #dbe9ff; --info-fg: #123f8c; --off-bg: #e8e8e8; --off-fg: #3d3d3d;
          color-scheme: light dark; }
        @media (prefers-color-scheme: dark) {
          :root { --bg: #121417; --fg: #e8e8e8; --muted: #b0b0b0; --line: #3a3f45; --head: #1d2126;
            --bar: #58a6ff; --track: #30363d; --ok-bg: #133d20; --ok-fg: #9be9a8; --bad-bg: #4a1515; --bad-fg: #ffb4b0;
            --wait-bg: #3d3000; --wait-fg: #f5d67a; --info-bg: #132c55; --info-fg: #a8c8ff; --off-bg: #2d3137; --off-fg: #d0d0d0; }
        }
        * { box-sizing: border-box; }
        body { margin: 0 auto; max-width: 80rem; padding: 0.75rem; background: var(--bg); color: var(--fg);
          font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
        h1 { font-size: 1.5rem; margin: 0.25rem 0; }
        h2 { font-size: 1.15rem; margin: 1.5rem 0 0.5rem; }
        .written, .note, .empty, figcaption, caption { color: var(--muted); }
        .written { margin: 0 0 0.75rem; }
        .empty { margin: 0.25rem 0; }
        .skip { position: absolute; left: -100vw; }
        .skip:focus { left: 0.75rem; background: var(--bg); padding: 0.25rem; }
        .summary, .facts { display: flex; flex-wrap: wrap; gap: 0.5rem; margin: 0; }
        .summary div, .facts div { border: 1px solid var(--line); border-radius: 6px; padding: 0.3rem 0.7rem; min-width: 6.5rem; }
        dt { font-size: 0.8rem; color: var(--muted); }
        dd { margin: 0; font-size: 1.2rem; font-variant-numeric: tabular-nums; }
        .facts dd { font-size: 1rem; }
        .scroll { overflow-x: auto; border: 1px solid var(--line); border-radius: 6px; }
        .scroll:focus { outline: 2px solid var(--bar); outline-offset: 2px; }
        table { border-collapse: collapse; min-width: 100%; font-variant-numeric: tabular-nums; }
        caption { text-align: left; font-size: 0.85rem; padding: 0.4rem 0.6rem; }
        th, td { padding: 0.35rem 0.6rem; text-align: left; vertical-align: top; border-top: 1px solid var(--line);
          white-space: nowrap; }
        thead th { background: var(--head); font-size: 0.85rem; }
        tbody th { font-weight: 600; white-space: normal; overflow-wrap: anywhere; min-width: 9rem; max-width: 22rem; }
        td.long { white-space: normal; overflow-wrap: anywhere; min-width: 12rem; max-width: 30rem; }
        .num { text-align: right; }
        progress { width: 8rem; height: 0.8rem; vertical-align: middle; accent-color: var(--bar); }
        progress::-webkit-progress-bar { background: var(--track); border-radius: 4px; }
        progress::-webkit-progress-value { background: var(--bar); border-radius: 4px; }
        progress::-moz-progress-bar { background: var(--bar); }
        .badge { display: inline-block; padding: 0 0.45rem; border-radius: 999px; font-size: 0.8rem; font-weight: 600;
          white-space: nowrap; background: var(--off-bg); color: var(--off-fg); }
        .s-running, .s-done { background: var(--ok-bg); color: var(--ok-fg); }
        .s-failed, .s-cancelled, .s-gone, .s-orphaned, .s-fenced { background: var(--bad-bg); color: var(--bad-fg); }
        .s-waiting, .s-held { background: var(--wait-bg); color: var(--wait-fg); }
        .s-queued { background: var(--info-bg); color: var(--info-fg); }
        figure { margin: 0; }
        figcaption { margin-top: 0.4rem; }
        .spark { display: block; width: 100%; max-width: 40rem; height: 3rem; color: var(--bar); fill: currentColor;
          border-bottom: 1px solid var(--line); }
        .spark .axis { stroke: var(--line); }
        code { font-size: 0.9em; }
        @media (max-width: 40rem) {
          body { padding: 0.5rem; font-size: 14px; }
          h2 { margin-top: 1.1rem; }
          .scroll { overflow-x: visible; border: 0; }
          table, tbody, tr, th, td, caption { display: block; min-width: 0; max-width: none; }
          thead { position: absolute; left: -100vw; }
          caption { padding: 0 0 0.4rem; }
          tr { border: 1px solid var(--line); border-radius: 6px; margin-bottom: 0.5rem; padding: 0.25rem 0; }
          th, td { border: 0; padding: 0.15rem 0.6rem; white-space: normal; overflow-wrap: anywhere; }
          td { display: flex; gap: 0.75rem; justify-content: space-between; text-align: right; }
          td::before { content: attr(data-label); color: var(--muted); text-align: left; white-space: nowrap; }
          td.long { display: block; text-align: left; }
          td.long::before { display: block; }
          progress { width: 6rem; }
        }

        """
}
