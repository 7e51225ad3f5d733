package embed

import "strings"

// stemGerman trims German inflections from a lower-case word, after
// CISTEM (Weissweiler and Fraser, "Developing a Stemmer for German Based
// on a Comparative Analysis of Publicly Available Stemmers", 2017), so
// that "Schlüssel", "Schlüsseln" and "schlussel" (a transcription without
// umlauts), or "kupferne", "kupfernen" and "kupfernem", share a feature.
// Umlauts fold to their base vowels and ß to ss; a leading "ge" of a word
// of six letters or more goes (the participle: "gestohlen", "stehlen"
// still differ, as the vowel changes); then, while the word is longer than
// three letters, "em", "er" or "nd" (when longer than five), or one of
// "t", "e", "s", "n" comes off the end. Like [Stem] it is light: names
// survive it mostly whole.
func stemGerman(w string) string {
	w = strings.NewReplacer("ä", "a", "ö", "o", "ü", "u", "ß", "ss").Replace(w)
	if len(w) >= 6 && strings.HasPrefix(w, "ge") {
		w = w[2:]
	}
	// The digraphs count as one letter and are never cut into.
	w = strings.NewReplacer("sch", "$", "ei", "%", "ie", "&").Replace(w)
	for len(w) > 3 {
		switch {
		case len(w) > 5 && (strings.HasSuffix(w, "em") || strings.HasSuffix(w, "er") || strings.HasSuffix(w, "nd")):
			w = w[:len(w)-2]
		case strings.HasSuffix(w, "t") || strings.HasSuffix(w, "e") || strings.HasSuffix(w, "s") || strings.HasSuffix(w, "n"):
			w = w[:len(w)-1]
		default:
			return strings.NewReplacer("$", "sch", "%", "ei", "&", "ie").Replace(w)
		}
	}
	return strings.NewReplacer("$", "sch", "%", "ei", "&", "ie").Replace(w)
}

// germanStopWords carry no meaning of their own for retrieval: articles,
// pronouns, auxiliaries, prepositions, question words and table filler.
var germanStopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`der die das den dem des ein eine einen einem einer eines kein keine keinen keinem keiner
		und oder aber sondern denn doch ja nein nicht auch noch schon nur so da dann wenn als ob dass weil
		ich du er sie es wir ihr mich dich sich mir dir ihm ihn uns euch ihnen man
		mein meine meinen meinem meiner dein deine deinen deinem deiner sein seine seinen seinem seiner
		ihre ihren ihrem ihrer unser unsere euer eure
		bin bist ist sind seid war warst waren wart sein gewesen wird wirst werden werdet wurde wurden worden
		hat hast habe haben habt hatte hattest hatten gehabt kann kannst können konnte soll sollen muss müssen will wollen
		im in ins am an ans auf aus bei beim mit nach von vom vor zu zum zur über unter für um durch gegen ohne bis
		was wer wen wem wessen wo woher wohin wann warum wieso weshalb wie welche welcher welches welchen welchem
		hier dort jetzt mal halt eben okay ok oh na also gut sagen sagt sagte gesagt irgendein irgendeine irgendeinen
		etwas alles alle diese dieser dieses diesen diesem jener jene`) {
		m[w] = true
	}
	return m
}()
