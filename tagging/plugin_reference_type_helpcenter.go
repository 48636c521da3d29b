package tagging

import "strings"

// ReferenceTypeHelpcenterPlugin emits KeyReferenceTypeHelpcenter when some reference URL,
// lower-cased, contains "/help". It is a plain substring test, so "/HELP/x" and "/helpdesk"
// count too.
type ReferenceTypeHelpcenterPlugin struct{}

// Key returns KeyReferenceTypeHelpcenter.
func (ReferenceTypeHelpcenterPlugin) Key() string { return KeyReferenceTypeHelpcenter }

// Description explains the tag in the glossary.
func (ReferenceTypeHelpcenterPlugin) Description() string {
	return "A reference URL points into a /help path."
}

// Compute emits the key when any reference URL contains "/help" in any case.
func (ReferenceTypeHelpcenterPlugin) Compute(in *Input) (string, bool) {
	for _, u := range in.ReferenceURLs {
		if strings.Contains(strings.ToLower(u), "/help") {
			return KeyReferenceTypeHelpcenter, true
		}
	}
	return "", false
}
