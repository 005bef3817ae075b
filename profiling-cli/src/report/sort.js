document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, column) {
    th.addEventListener("click", function () {
      var body = table.tBodies[0];
      var descending = th.getAttribute("aria-sort") !== "descending";
      table.querySelectorAll("th").forEach(function (other) { other.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", descending ? "descending" : "ascending");
      var key = function (row) {
        var cell = row.cells[column];
        var sort = cell.getAttribute("data-sort");
        return sort !== null ? parseFloat(sort) : cell.textContent;
      };
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        var order = (typeof x === "number" && typeof y === "number") ? x - y : String(x).localeCompare(String(y));
        return descending ? -order : order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
