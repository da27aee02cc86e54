// Click a header button to sort a table by that column (numbers numerically, blanks last).
document.querySelectorAll("table.sortable").forEach((table) => {
  table.querySelectorAll("th").forEach((th, index) => {
    const button = document.createElement("button");
    button.className = "sort";
    button.type = "button";
    button.textContent = th.textContent;
    const arrow = document.createElement("span");
    arrow.setAttribute("aria-hidden", "true");
    arrow.className = "sort-arrow";
    arrow.textContent = " \u2195";
    button.appendChild(arrow);
    th.textContent = "";
    th.appendChild(button);
    th.setAttribute("aria-sort", "none");
    button.addEventListener("click", () => {
      const ascending = th.getAttribute("aria-sort") !== "ascending";
      table.querySelectorAll("th").forEach((other) => other.setAttribute("aria-sort", "none"));
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      const body = table.tBodies[0];
      const rows = Array.from(body.rows);
      const key = (row) => {
        const cell = row.cells[index];
        const raw = cell.dataset.value ?? cell.textContent.trim();
        const number = Number(raw);
        return raw === "" ? null : Number.isNaN(number) ? raw : number;
      };
      rows.sort((a, b) => {
        const x = key(a), y = key(b);
        if (x === null) return 1;
        if (y === null) return -1;
        const order = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
        return ascending ? order : -order;
      });
      rows.forEach((row) => body.appendChild(row));
    });
  });
});
