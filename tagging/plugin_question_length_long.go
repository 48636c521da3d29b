package tagging

// QuestionLengthLongPlugin emits KeyQuestionLengthLong when the latest user question has
// more than MediumMaxWords words.
type QuestionLengthLongPlugin struct{}

// Key returns KeyQuestionLengthLong.
func (QuestionLengthLongPlugin) Key() string { return KeyQuestionLengthLong }

// Description explains the tag in the glossary.
func (QuestionLengthLongPlugin) Description() string {
	return "The latest user question has more than 30 words."
}

// Compute emits the key for questions of more than MediumMaxWords words.
func (QuestionLengthLongPlugin) Compute(in *Input) (string, bool) {
	return emitIf(questionWords(in) > MediumMaxWords, KeyQuestionLengthLong)
}
