// Wharf web UI: the only first-party script.
//
// Load it after htmx and its SSE extension, in <head> and without "defer", so
// the stored theme is applied before the first paint; the three src URLs
// come from static.URL("vendor/htmx-2.0.11.min.js"),
// static.URL("vendor/htmx-ext-sse-2.2.4.js") and static.URL("app.js").
//
// Everything that needs the document body uses event delegation on document,
// so nothing here waits for the DOM except the toggle buttons' state.
(function () {
	"use strict";

	var THEME_KEY = "wharf-theme";
	var root = document.documentElement;

	// ---- htmx configuration ----

	if (window.htmx) {
		// Requests only ever go to this origin; no eval, no script tags in
		// swapped content, no inline indicator styles (the CSP refuses them).
		htmx.config.selfRequestsOnly = true;
		htmx.config.allowEval = false;
		htmx.config.allowScriptTags = false;
		htmx.config.includeIndicatorStyles = false;
	}

	function csrfToken() {
		var meta = document.querySelector('meta[name="csrf-token"]');
		return meta ? meta.getAttribute("content") : "";
	}

	document.addEventListener("htmx:configRequest", function (event) {
		var token = csrfToken();
		if (token) {
			event.detail.headers["X-CSRF-Token"] = token;
		}
	});

	// ---- Theme ----

	function storedTheme() {
		try {
			var value = window.localStorage.getItem(THEME_KEY);
			return value === "light" || value === "dark" ? value : "";
		} catch (err) {
			return "";
		}
	}

	function storeTheme(value) {
		try {
			window.localStorage.setItem(THEME_KEY, value);
		} catch (err) {
			// Storage may be unavailable (private browsing); the choice then
			// lasts for this page only.
		}
	}

	function effectiveTheme() {
		var explicit = root.getAttribute("data-theme");
		if (explicit === "light" || explicit === "dark") {
			return explicit;
		}
		var prefersDark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
		return prefersDark ? "dark" : "light";
	}

	// The toggle names the theme it switches to.
	function syncToggles() {
		var dark = effectiveTheme() === "dark";
		var names = document.querySelectorAll("[data-theme-toggle] [data-theme-name]");
		for (var i = 0; i < names.length; i++) {
			names[i].textContent = dark ? "light" : "dark";
		}
	}

	var initial = storedTheme();
	if (initial) {
		root.setAttribute("data-theme", initial);
	}

	document.addEventListener("click", function (event) {
		var toggle = event.target.closest ? event.target.closest("[data-theme-toggle]") : null;
		if (!toggle) {
			return;
		}
		event.preventDefault();
		var next = effectiveTheme() === "dark" ? "light" : "dark";
		root.setAttribute("data-theme", next);
		storeTheme(next);
		syncToggles();
	});

	if (document.readyState === "loading") {
		document.addEventListener("DOMContentLoaded", syncToggles);
	} else {
		syncToggles();
	}
	// Toggles can arrive in swapped fragments.
	document.addEventListener("htmx:afterSettle", syncToggles);

	// ---- Confirmation ----

	// A form with data-confirm="Question?" asks before it submits; a submit
	// button's own data-confirm takes precedence. The listener runs in the
	// capture phase on document, so a refusal stops the event before htmx's
	// listener on the form sees it; htmx and plain forms are treated alike
	// without hx-confirm.
	document.addEventListener(
		"submit",
		function (event) {
			var form = event.target;
			if (!(form instanceof HTMLFormElement)) {
				return;
			}
			var submitter = event.submitter;
			var question =
				(submitter && submitter.getAttribute("data-confirm")) || form.getAttribute("data-confirm");
			if (!question) {
				return;
			}
			if (!window.confirm(question)) {
				event.preventDefault();
				event.stopImmediatePropagation();
			}
		},
		true
	);
})();
