// The dashboard's own check of the account this browser signed in as (cookie tossing).
//
// Cookies are shared by every port of a host, so a server on another port can replace both session cookies with a
// pair of its own account's, which the server cannot tell from the victim's. This origin's localStorage cannot be
// reached from another port: signing in through this site's form records the account the next page names, and a
// page naming another account was not signed in here. That page says so, signs out (revoking the tossed session)
// and returns to the sign-in page. The last account is kept across sign-outs, so a toss while signed out is caught
// too; the first page after the record is cleared (a new browser profile) is trusted.
(function () {
  "use strict";
  const ACCOUNT = "fairsolve.signedInAs", SIGNING_IN = "fairsolve.signingIn";
  const form = document.getElementById("signin-form");
  if (form) {
    localStorage.removeItem(SIGNING_IN);  // a failed attempt shows this page again: it vouches for nothing
    form.addEventListener("submit", () => localStorage.setItem(SIGNING_IN, "1"));
  }
  const shown = document.getElementById("signed-in-as");
  if (!shown) return;
  const owner = shown.dataset.owner, known = localStorage.getItem(ACCOUNT);
  if (localStorage.getItem(SIGNING_IN) || known === null) {
    localStorage.setItem(ACCOUNT, owner);
    localStorage.removeItem(SIGNING_IN);
    return;
  }
  if (known === owner) return;
  document.body.classList.add("session-mismatch");
  const main = document.querySelector("main");
  const warning = document.createElement("p");
  warning.className = "message error";
  warning.id = "session-mismatch";
  warning.textContent = "This browser signed in as " + known + ", but this page is signed in as " + owner +
    ": the session was replaced from outside this site. Signing out.";
  main.replaceChildren(warning);
  fetch("/signout", {method: "POST", credentials: "same-origin"})
    .finally(() => location.assign("/signin?next=" + encodeURIComponent(location.pathname)));
})();
