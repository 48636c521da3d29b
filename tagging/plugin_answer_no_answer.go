package tagging

import "strings"

// NoAnswerMarker is the answer text agents give when they have no answer.
const NoAnswerMarker = "no_answer"

// AnswerNoAnswerPlugin emits KeyAnswerNoAnswer when the final agent answer is the
// no_answer marker, compared with Unicode case folding. The answer text is already trimmed;
// anything else around the marker ("NO_ANSWER.") means it is not the marker.
type AnswerNoAnswerPlugin struct{}

// Key returns KeyAnswerNoAnswer.
func (AnswerNoAnswerPlugin) Key() string { return KeyAnswerNoAnswer }

// Description explains the tag in the glossary.
func (AnswerNoAnswerPlugin) Description() string {
	return "The final agent answer is the no_answer marker."
}

// Compute emits the key when the answer equals NoAnswerMarker, ignoring case.
func (AnswerNoAnswerPlugin) Compute(in *Input) (string, bool) {
	return emitIf(strings.EqualFold(in.Answer, NoAnswerMarker), KeyAnswerNoAnswer)
}
