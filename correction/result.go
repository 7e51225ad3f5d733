package correction

// Stage says which stage of the pipeline made a substitution.
type Stage int

// Stages.
const (
	// StagePhonetic is the in-process matcher (stage 1).
	StagePhonetic Stage = 1
	// StageLLM is the language-model pass (stage 2).
	StageLLM Stage = 2
)

// Method says how the matcher found a name.
const (
	// MethodExact: the words spell the name apart from case and spacing.
	MethodExact = "exact"
	// MethodPhonetic: the Double Metaphone codes agree and Jaro-Winkler
	// cleared the phonetic threshold.
	MethodPhonetic = "phonetic"
	// MethodFuzzy: no code agreed; Jaro-Winkler cleared the fuzzy
	// threshold.
	MethodFuzzy = "fuzzy"
	// MethodLLM: the language model proposed it and the guard accepted it.
	MethodLLM = "llm"
)

// Result is a corrected utterance with its audit trail.
type Result struct {
	// Text is the corrected utterance.
	Text string `json:"text"`
	// RawText is what speech-to-text produced.
	RawText string `json:"raw_text"`
	// Substitutions lists every change, in text order.
	Substitutions []Substitution `json:"substitutions"`
}

// Substitution is one replaced span.
type Substitution struct {
	// Start and End are byte offsets of Original in RawText.
	Start int `json:"start"`
	End   int `json:"end"`
	// Original is the text replaced; Replacement the name written instead.
	Original    string `json:"original"`
	Replacement string `json:"replacement"`
	EntityID    string `json:"entity_id"`
	// Score is the Jaro-Winkler similarity that justified the change (1 for
	// stage-2 substitutions the guard accepted).
	Score float64 `json:"score"`
	Stage Stage   `json:"stage"`
	// Method is one of the Method constants.
	Method string `json:"method"`
}

// Changed reports whether the utterance was altered.
func (r Result) Changed() bool { return r.Text != r.RawText }
