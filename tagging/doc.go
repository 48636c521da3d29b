// Package tagging owns the tags of ground-truth items (domain-and-tags.md §2–§4, §6.1):
// tag normalization, the computed-tag plugins and their Registry, the manual-tag providers
// (environment allowlist, groups file), the tag validators, and the Pipeline that implements
// gtc.Tagger for every write path.
//
// Nothing here registers itself: cmd/gtc builds a Registry, loads the groups file, picks the
// validators and hands the resulting Pipeline to the services. Tests build their own.
package tagging
