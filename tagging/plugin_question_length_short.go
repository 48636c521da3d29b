package tagging

// QuestionLengthShortPlugin emits KeyQuestionLengthShort when the latest user question has
// at most ShortMaxWords words. An item without a question has 0 words and is short, so every
// item gets exactly one question_length tag.
type QuestionLengthShortPlugin struct{}

// Key returns KeyQuestionLengthShort.
func (QuestionLengthShortPlugin) Key() string { return KeyQuestionLengthShort }

// Description explains the tag in the glossary.
func (QuestionLengthShortPlugin) Description() string {
	return "The latest user question has at most 10 words."
}

// Compute emits the key for questions of at most ShortMaxWords words.
func (QuestionLengthShortPlugin) Compute(in *Input) (string, bool) {
	return emitIf(questionWords(in) <= ShortMaxWords, KeyQuestionLengthShort)
}
