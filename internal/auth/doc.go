// Package auth holds the account-security primitives behind sign-in: password
// hashing and strength rules (password), time-based one-time codes (totp),
// one-time recovery codes (recovery), enrolment QR codes drawn as SVG (qrsvg),
// the sign-in throttle (throttle) and single sign-on with OpenID Connect
// providers (oidc). The packages hold no state about users; storing hashes,
// secrets, last-used steps and spent recovery codes is the caller's job.
package auth
