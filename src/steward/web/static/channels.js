// The Channels page: enable Web Push on this device. Registers the service worker (/sw.js),
// asks for permission, subscribes with the installation's VAPID public key and posts the
// subscription to /channels/push (a form post with this session's CSRF token).
(function () {
  "use strict";
  var box = document.getElementById("push");
  if (!box) return;
  var button = box.querySelector("button");
  var said = box.querySelector(".said");
  if (!("serviceWorker" in navigator) || !("PushManager" in window) || !("Notification" in window)) {
    said.textContent = "This browser cannot show Steward's notifications here. On an iPhone, add Steward to the home screen first and open it from there.";
    button.disabled = true;
    return;
  }
  function bytes(base64url) {
    var text = (base64url + "===".slice((base64url.length + 3) % 4)).replace(/-/g, "+").replace(/_/g, "/");
    var raw = atob(text);
    var out = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
    return out;
  }
  button.addEventListener("click", async function () {
    button.disabled = true;
    said.textContent = "Asking this device…";
    try {
      var registration = await navigator.serviceWorker.register("/sw.js", { scope: "/" });
      await navigator.serviceWorker.ready;
      var permission = await Notification.requestPermission();
      if (permission !== "granted") {
        said.textContent = "Notifications are not allowed for Steward on this device; allow them in the browser's settings, then try again.";
        return;
      }
      var subscription = await registration.pushManager.subscribe({
        userVisibleOnly: true,
        applicationServerKey: bytes(box.dataset.key),
      });
      var body = new URLSearchParams({
        csrf: box.dataset.csrf,
        name: box.querySelector("input[name=name]").value,
        subscription: JSON.stringify(subscription.toJSON()),
      });
      var answer = await fetch("/channels/push", { method: "POST", body: body, credentials: "same-origin" });
      if (answer.ok) {
        window.location.assign(answer.url);
      } else {
        said.textContent = "Steward could not add this device (" + answer.status + "); reload the page and try again.";
      }
    } catch (error) {
      said.textContent = "Notifications could not be turned on here: " + error.message;
    } finally {
      button.disabled = false;
    }
  });
})();
