// Package e2e holds pistra's end-to-end tests: pistrad started in-process
// (and once as a real process) in front of fake OpenAI and Anthropic
// upstreams on loopback, driven with the official OpenAI and Anthropic Go
// SDKs. The policy is real CUE compiled by the compiler and served from a
// bundle file, so the tests cover the path a deployment takes.
package e2e
