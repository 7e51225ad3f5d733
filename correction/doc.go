// Package correction restores the names speech-to-text mangles
// ("elder nacks" → "Eldrinax", "iron hold" → "Ironhold") without damaging
// ordinary speech.
//
// # Stage 1: phonetic matching
//
// A [Matcher] compares word windows of an utterance, longest first, with
// the names and aliases of a campaign's entities. Double Metaphone codes
// find candidates, Jaro-Winkler similarity (the best of the whole window,
// the window without spaces, and word by word) ranks them. Codes that agree
// need a similarity of 0.70, otherwise 0.85 (names of five letters or
// fewer must agree phonetically). A first sound heard as its neighbour
// (b/p/f/v/ph, s/z/sh/th: "barrow gate" for Varrowgate) still counts as
// agreement, at a small cost to the score. A guard keeps ordinary speech
// alone:
//
//   - a single English word (from the embedded dictionary, inflections
//     included, however rare: "glows", "rosin") never becomes a name, and a
//     phrase made only of common words needs 0.93 ("iron hold" →
//     "Ironhold") unless each word sounds like its piece of the name; a
//     name that is itself one common word ("Wren") is left as spoken,
//     one of several ("the lantern court") is restored;
//   - a function word at the edge of a window must carry the sound the name
//     begins or ends with and the rest of the window lacks ("on dry a" may
//     be Ondraya, "ondria a" keeps its "a"; a first vowel is heard as any
//     vowel, so "a lara" may be Elara), and next to English words it
//     needs 0.94; a function word inside the window that the name lacks
//     needs 0.95 ("the queen is old" stays);
//   - window and name may differ by at most two letters or a quarter of
//     the name, and the bare start of a name ("marrow" for "Marrowind") is
//     no match;
//   - word for word, each word must resemble its counterpart, and a common
//     word must sound like it ("old man" is not "Old Mab"); a window of
//     more words than the name is cut into pieces of the name, and each
//     English word must sound like its piece ("bramble week" is
//     Bramblewick, "ember glows" is not Emberguild);
//   - without phonetic agreement, a window holding any common word needs
//     0.93;
//   - a window made only of ordinary words needs evidence besides its
//     sound ([Evidence], [Matcher.MatchEvidence]): one ordinary word, with
//     or without function words ("the gold" for "the Guild", "sell a" for
//     Sela), only when the recogniser was unsure of it or it is capitalised
//     inside the sentence; several ("grim jaw") also when the name is in
//     play (present in the scene or said in the last minutes).
//
// The word lists are per language ([WithLanguage]): English (a general
// dictionary and a hand-written common-word list) and German (a
// hand-written general dictionary that tells nouns from other words, a
// common-word list, German endings). The German guard reads the same
// evidence as the English one; its own reading of plain German is that a
// noun joined to a lower-case word, or a verb form with an ending the
// name lacks, is grammar ("den Wald traut" is no Waltraud).
//
// Overlapping candidates are settled by score, except that a full name
// around an alias ("sir aldous ven" → "Ser Aldous Venn"), a window
// closer to the name's length, and a window whose edge function word
// carries a sound of the name ("vhal more a") win over near ties. Possessives and
// punctuation stay ("elder nacks's" → "Eldrinax's"), and so does the
// speaker's text around the name.
//
//	m, _ := correction.NewMatcher()
//	prep, _ := m.PrepareEntities(entities) // once per entity list
//	res := m.MatchPrepared("did you talk to elder nacks yet", prep)
//	// res.Text == "did you talk to Eldrinax yet"
//
// # Stage 2: the language model
//
// An [LLMCorrector] asks a model behind any OpenAI-compatible endpoint to
// fix the words the recogniser was unsure of. [Pipeline.Refine] compares
// the reply with the text word by word and keeps only the changes the model
// declared, that replace candidate words, and that write a known name of
// the declared entity. A failed, late or unreadable reply leaves the
// stage-1 text.
//
// # Pipeline
//
// [NewPipeline] wires both stages: [Pipeline.Correct] runs stage 1 inline,
// weighing the utterance's word confidences and names in play
// ([Utterance]); [Pipeline.Refine] runs stage 2 when the caller chooses.
// The table runs it in the background, after the NPC has answered, and
// amends the recorded line with its result.
//
// # Keyword boosting
//
// [Rank] orders entities (scene first, then the most recently mentioned);
// [DeepgramKeyterms], [DeepgramKeywords] and [WhisperPrompt] turn the
// ranking into what each speech-to-text service takes.
package correction
