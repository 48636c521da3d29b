package tagging

import "fmt"

// specError builds an error whose text is fixed by the spec (domain-and-tags.md Appendix A).
// Several of those messages start with a capital letter, which Go's error-string convention
// (and staticcheck ST1005) would otherwise flag; the spec text wins.
func specError(format string, args ...any) error {
	return fmt.Errorf(format, args...)
}
