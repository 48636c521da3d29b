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
		if containsHelpPath(u) {
			return KeyReferenceTypeHelpcenter, true
		}
	}
	return "", false
}

// containsHelpPath is strings.Contains(strings.ToLower(u), "/help"). URLs are ASCII almost
// always; for those it compares in place instead of lower-casing a copy.
func containsHelpPath(u string) bool {
	if !isASCII(u) {
		return strings.Contains(strings.ToLower(u), "/help")
	}
	for i := 0; i+5 <= len(u); i++ {
		if u[i] == '/' && lowerASCII(u[i+1]) == 'h' && lowerASCII(u[i+2]) == 'e' &&
			lowerASCII(u[i+3]) == 'l' && lowerASCII(u[i+4]) == 'p' {
			return true
		}
	}
	return false
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
