// The desktop app navigates here with `#error=<text>` when it cannot reach
// or start the daemon; otherwise this page only says it is connecting.
function show() {
  const params = new URLSearchParams(location.hash.slice(1));
  const error = params.get("error");
  const status = document.getElementById("status");
  const detail = document.getElementById("detail");
  if (error) {
    document.body.classList.add("error");
    status.textContent = "Strobe's daemon is not available.";
    detail.textContent = error + "\n\nThe app keeps trying; agents can still use `strobe mcp`.";
  } else {
    document.body.classList.remove("error");
    status.textContent = "Connecting to Strobe…";
    detail.textContent = "";
  }
}
window.addEventListener("hashchange", show);
show();
