package tagging

import "fmt"

// specError builds an error whose text clients see word for word. Several of those messages
// start with a capital letter, which Go's error-string convention (and staticcheck ST1005)
// would otherwise flag; the fixed text wins.
func specError(format string, args ...any) error {
	return fmt.Errorf(format, args...)
}
