// Package tagging owns the tags of ground-truth items: tag normalization, the computed-tag
// plugins and their Registry, the manual-tag providers (environment allowlist, groups file,
// tag store), the tag validators, the Pipeline that implements gtc.Tagger for every write
// path, and the Vocabulary that implements gtc.TagVocabulary (known tags, the tag store, the
// schema, the glossary and its definitions).
//
// Normalization composes every tag into Unicode NFC, so a tag typed in composed and in
// decomposed form is one tag, and applies three product rules beyond the group:value form,
// so every tag the server accepts can also be found again:
//   - a raw tag that contains an invisible format character (Unicode Cf: zero-width spaces
//     and joiners, bidirectional overrides, …) is refused: it would look like another tag
//     and slip past the tag rules as a different one;
//   - a raw tag that contains a comma, or a control character that is not whitespace, is
//     refused with "Invalid tag format (commas and control characters are not allowed):
//     '<raw>'": comma-separated list filters and the comma form of manualTags on import
//     split on commas, so such a tag could never be addressed;
//   - a normalized tag longer than MaxTagLength (100) characters is refused with "Invalid tag
//     format (longer than 100 characters): '<raw>'": the explorer's tag filter refuses
//     longer tags, so such a tag could never be filtered on.
//
// Nothing here registers itself: cmd/gtc builds a Registry, loads the groups file, picks the
// validators and hands the resulting Pipeline and Vocabulary to the services. Tests build
// their own.
//
// Pipeline.Prepare runs on every write, so its path avoids work that does not change the
// answer: already-normalized tags are recognised without copying, references come from the
// single-pass reader of gtc.References, and validators check a valid tag set without
// allocating. BenchmarkPrepare measures it.
package tagging
