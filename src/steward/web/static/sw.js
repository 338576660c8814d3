// Steward's service worker: shows a Web Push message as a notification; tapping it opens the
// page it is about (on this site only), focusing a window that shows it already.
"use strict";

self.addEventListener("install", function () {
  self.skipWaiting();
});

self.addEventListener("activate", function (event) {
  event.waitUntil(self.clients.claim());
});

self.addEventListener("push", function (event) {
  var data = {};
  if (event.data) {
    try {
      data = event.data.json();
    } catch (error) {
      data = { title: "Steward", body: event.data.text() };
    }
  }
  event.waitUntil(
    self.registration.showNotification(data.title || "Steward", {
      body: data.body || "",
      tag: data.tag || undefined,
      icon: "/static/icon-192.png",
      badge: "/static/icon-192.png",
      requireInteraction: data.importance === "urgent",
      data: { url: data.url || "/" },
    })
  );
});

self.addEventListener("notificationclick", function (event) {
  event.notification.close();
  var wanted = (event.notification.data && event.notification.data.url) || "/";
  var target = new URL(wanted, self.location.origin);
  if (target.origin !== self.location.origin) target = new URL("/", self.location.origin);
  event.waitUntil(
    self.clients.matchAll({ type: "window", includeUncontrolled: true }).then(function (windows) {
      for (var i = 0; i < windows.length; i++) {
        if (windows[i].url === target.href && "focus" in windows[i]) return windows[i].focus();
      }
      return self.clients.openWindow(target.href);
    })
  );
});
