package npc

import "strings"

// rules are a language's words for telling whom a line speaks to. They are
// read-only once built.
type rules struct {
	// openers may stand before a vocative name ("hey", "sag mal").
	openers map[string]bool
	// thirdPerson words after a name make it a reference ("Grimjaw
	// said…"); thirdPersonEnding is the regular third-person ending of
	// the language's verbs ("turns", "steht"), with the words that end so
	// and are not verbs, and an ending that is never one ("st": "hast").
	thirdPerson          map[string]bool
	thirdPersonEnding    string
	notThirdPerson       map[string]bool
	notThirdPersonSuffix string
	// fillers are what speech-to-text writes for a pause ("and", "uh").
	fillers map[string]bool
	// joiners join names said together ("Tyrul and Goryr").
	joiners map[string]bool
	// objectTakers are words after which a name is their object, not the
	// person spoken to: prepositions, articles, and verbs that take a
	// person.
	objectTakers map[string]bool
	// questionWords open questions; questionStarters are the verbs that
	// open yes/no questions.
	questionWords, questionStarters map[string]bool
	// secondPersonWords speak to someone; formalYou are the forms of
	// address told apart by case ("Sie", "Ihnen").
	secondPersonWords map[string]bool
	formalYou         []string
	// pluralYou is the plural "you" that is also another word ("ihr":
	// you all, her, to her); it speaks to several only beside a verb of
	// the second person plural: pluralVerbs, or a lower-case word with
	// pluralVerbEnding that is none of notPluralVerbs ("hat ihr", "gab
	// ihr": to her). pluralYouPhrases speak to several on their own
	// ("you both", "ihr beide").
	pluralYou        string
	pluralVerbs      map[string]bool
	pluralVerbEnding string
	notPluralVerbs   map[string]bool
	pluralYouPhrases []string
	// secondPersonNextWords, right after a name without a comma, make it
	// a vocative ("Grimjaw do you…").
	secondPersonNextWords map[string]bool
	// needsYou are those of them that also tell of several people
	// ("wissen"): they make a vocative only when a "you" follows.
	needsYou map[string]bool
	// imperatives that players direct at an NPC.
	imperatives map[string]bool
	// shortReplies continue a conversation without being questions.
	shortReplies map[string]bool
}

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// rulesFor returns the rules of a BCP-47 language code; false (and the
// English rules) for a language without its own.
func rulesFor(code string) (*rules, bool) {
	lang, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(code)), "-")
	lang, _, _ = strings.Cut(lang, "_")
	switch lang {
	case "", "en":
		return &english, true
	case "de":
		return &german, true
	}
	return &english, false
}

// english are the English rules.
var english = rules{
	openers: set("hey", "hi", "hello", "oi", "oy", "ok", "okay", "so", "well", "excuse", "me", "pardon", "greetings",
		"good", "morning", "evening", "afternoon", "and", "but", "now", "listen", "look", "yo", "ah", "oh", "please",
		"sir", "madam", "master", "lady", "lord", "dear", "thanks", "thank", "uh", "um", "er", "sorry"),
	thirdPerson: set("is", "was", "said", "says", "told", "tells", "has", "had", "knows", "knew", "thinks", "thought",
		"wants", "wanted", "will", "would", "might", "must", "lives", "lied", "lies", "went", "gave", "gives", "did",
		"does", "can't", "isn't", "wasn't", "and", "or", "mentioned", "seems", "looks", "'s", "s", "are", "were",
		"stands", "sat", "stood", "left", "came", "turned", "nodded", "smiled", "frowned", "asked", "answered"),
	thirdPersonEnding: "s",
	notThirdPerson: set("yes", "thanks", "please", "this", "his", "hers", "its", "us", "was", "is", "as", "ours",
		"yours", "theirs", "always", "perhaps", "towards", "across", "whereas", "unless", "less", "news", "lots",
		"guards", "guys", "folks", "sirs", "ladies", "gents", "boys", "girls", "friends", "thus", "does"),
	notThirdPersonSuffix: "ss",
	fillers:              set("and", "uh", "um", "er", "ah", "an", "erm", "hm", "hmm"),
	joiners:              set("and"),
	objectTakers: set("of", "about", "to", "with", "for", "from", "at", "in", "on", "by", "like", "than", "and", "or",
		"nor", "the", "a", "an", "trust", "know", "knew", "see", "saw", "seen", "meet", "met", "ask", "asked", "tell",
		"told", "find", "found", "love", "hate", "kill", "killed", "help", "helped", "fight", "follow", "believe",
		"think", "heard", "hear", "call", "called", "fear", "serve", "serves", "is", "was", "are", "were", "be", "not",
		"visit", "pay", "paid", "owe", "thank", "against", "without", "under", "before", "after", "behind", "beside",
		"near", "into", "through", "towards", "toward", "his", "her", "their", "my", "our", "your"),
	questionWords: set("what", "who", "where", "when", "why", "how", "which", "whose"),
	questionStarters: set("do", "does", "can", "could", "would", "will", "is", "are", "have", "did", "should",
		"may", "might", "shall"),
	secondPersonWords: set("you", "your", "yours", "you're", "you've", "you'll", "you'd", "yourself", "yourselves",
		"thee", "thou", "thy", "ye", "y'all"),
	secondPersonNextWords: set("you", "your", "tell", "can", "could", "do", "did", "have", "are", "will", "would",
		"please", "i", "we", "is", "any", "got"),
	imperatives: set("tell", "show", "give", "sell", "take", "help", "wait", "stop", "listen", "explain", "describe",
		"follow", "lead", "open"),
	pluralYouPhrases: []string{"you both", "both of you", "you two", "all of you", "you all", "y'all"},
	shortReplies: set("yes", "no", "yeah", "nope", "okay", "ok", "thanks", "sure", "deal", "agreed", "fine",
		"alright", "really", "hmm", "aye", "nay", "please"),
}

// german are the German rules.
var german = rules{
	openers: set("hallo", "hi", "hey", "he", "heda", "hallöchen", "servus", "moin", "grüß", "gott", "grüezi",
		"guten", "tag", "morgen", "abend", "sag", "sagt", "sagen", "mal", "also", "na", "ja", "ok", "okay", "und",
		"aber", "entschuldigung", "entschuldige", "entschuldigen", "sie", "verzeihung", "bitte", "herr", "frau",
		"meister", "meisterin", "hör", "hört", "hören", "zu", "schau", "danke", "oh", "ach", "äh", "ähm", "du",
		"lieber", "liebe", "werter", "werte", "edler", "edle", "nun", "so", "sorry", "tschuldigung"),
	thirdPerson: set("ist", "war", "hat", "hatte", "sagte", "sagt", "meinte", "meint", "weiß", "wusste", "will",
		"wollte", "kann", "konnte", "muss", "musste", "soll", "sollte", "wird", "würde", "lebt", "lügt", "log", "ging",
		"geht", "gab", "kam", "kommt", "scheint", "sieht", "sah", "sind", "waren", "haben", "hätte", "wäre", "und",
		"oder", "steht", "stand", "erzählte", "glaubt", "denkt", "dachte", "schaut", "nickt", "lacht"),
	thirdPersonEnding: "t",
	notThirdPerson: set("gibt", "bitte", "gut", "jetzt", "nicht", "nichts", "erst", "selbst", "seid", "habt", "wisst",
		"könnt", "wollt", "sollt", "dürft", "müsst", "mit", "heut", "gerät"),
	notThirdPersonSuffix: "st",
	fillers:              set("und", "äh", "ähm", "öh", "öhm", "hm", "hmm", "also"),
	joiners:              set("und"),
	objectTakers: set("von", "vom", "über", "mit", "für", "zu", "zum", "zur", "bei", "beim", "an", "am", "auf", "in",
		"im", "aus", "nach", "gegen", "ohne", "um", "der", "die", "das", "den", "dem", "des", "ein", "eine", "einen",
		"einem", "einer", "und", "oder", "mein", "meine", "meinen", "dein", "deine", "deinen", "sein", "seine",
		"seinen", "ihre", "ihren", "unser", "unsere", "euer", "eure", "kenne", "kennst", "kennt", "traue", "traust",
		"vertraue", "vertraust", "sah", "gesehen", "frag", "fragt", "fragen", "gefragt", "getroffen", "ist", "war",
		"sind", "nicht", "als", "wie", "glaube", "glaubst", "hinter", "neben", "vor", "unter", "zwischen"),
	questionWords: set("was", "wer", "wo", "wann", "warum", "wie", "welche", "welcher", "welches", "welchen", "wen",
		"wem", "wessen", "wohin", "woher", "weshalb", "wieso", "womit", "worüber", "wieviel", "weswegen"),
	questionStarters: set("kannst", "können", "könnt", "könnten", "hast", "habt", "haben", "bist", "seid", "sind",
		"ist", "weißt", "wisst", "wissen", "gibt", "gibt's", "darf", "dürfen", "darfst", "soll", "sollen", "willst",
		"wollt", "wollen", "würdest", "würden", "hättest", "hätten", "hat", "war", "warst", "wart"),
	secondPersonWords: set("du", "dich", "dir", "dein", "deine", "deinen", "deinem", "deiner", "ihr", "euch", "euer",
		"eure", "euren", "eurem", "eurer"),
	formalYou: []string{"Sie", "Ihnen", "Ihr", "Ihre", "Ihren", "Ihrem"},
	secondPersonNextWords: set("du", "ihr", "kannst", "könnt", "können", "hast", "habt", "haben", "bist", "seid",
		"weißt", "wisst", "wissen", "gibt", "gibt's", "gib", "sag", "zeig", "hilf", "bitte", "ich", "wir", "würdest",
		"würden", "willst", "wollt", "darf", "dürfen", "verkaufst", "verkauft", "hättest", "hätten"),
	needsYou:  set("können", "haben", "wissen", "würden", "dürfen", "hätten"),
	pluralYou: "ihr",
	pluralVerbs: set("seid", "habt", "wisst", "könnt", "wollt", "sollt", "dürft", "müsst", "werdet", "wart",
		"hättet", "würdet", "könntet", "solltet", "möchtet", "mögt", "tut", "gebt", "nehmt", "seht", "lest"),
	pluralVerbEnding: "t",
	notPluralVerbs: set("hat", "ist", "wird", "weiß", "nicht", "nichts", "jetzt", "gut", "erst", "selbst", "mit",
		"heut", "bitte", "recht", "fast", "bist", "hast", "kannst", "musst", "sollst", "willst", "darfst", "gibt",
		"weißt", "gerät", "halt", "dort", "sicht", "acht", "nacht", "welt", "zeit", "stadt", "gast", "rast"),
	pluralYouPhrases: []string{"ihr beide", "ihr zwei", "ihr alle", "euch beide", "euch allen", "euch beiden"},
	imperatives: set("sag", "erzähl", "erzähle", "erzählt", "zeig", "zeige", "gib", "verkauf", "hilf", "warte",
		"wartet", "halt", "hör", "hört", "erklär", "erkläre", "beschreib", "folge", "folgt", "führ", "öffne", "komm",
		"bring", "nimm"),
	shortReplies: set("ja", "nein", "jo", "ne", "nö", "okay", "ok", "danke", "klar", "gut", "einverstanden",
		"abgemacht", "sicher", "genau", "wirklich", "hm", "bitte", "gerne", "gern", "na"),
}

// speaksToSeveral reports whether text (with words ws) speaks to several
// people: a phrase of pluralYouPhrases, or pluralYou beside a verb of the
// second person plural ("wisst ihr", "ihr habt", "was meint ihr"), not
// the formal "Ihr" of one person inside a sentence ("Habt Ihr…"), nor
// "ihr" for her ("gib ihr das Gold", "ihr Schwert").
func (r *rules) speaksToSeveral(text string, ws []word) bool {
	joined := " " + joinWords(ws) + " "
	for _, p := range r.pluralYouPhrases {
		if strings.Contains(joined, " "+p+" ") {
			return true
		}
	}
	if r.pluralYou == "" {
		return false
	}
	for k, w := range ws {
		if w.text != r.pluralYou {
			continue
		}
		if raw := text[w.start:w.end]; k > 0 && raw != w.text && !sentenceOpens(text, w.start) {
			continue // "Ihr" inside a sentence: formal, one person
		}
		if k > 0 && r.pluralVerb(text, ws[k-1]) || k+1 < len(ws) && r.pluralVerb(text, ws[k+1]) {
			return true
		}
	}
	return false
}

// pluralVerb reports whether w reads as a verb of the second person
// plural: written in lower case (a capitalised word is a German noun:
// "ihr Schwert") and a known plural form or a regular one.
func (r *rules) pluralVerb(text string, w word) bool {
	if text[w.start:w.end] != w.text {
		return false
	}
	if r.pluralVerbs[w.text] {
		return true
	}
	return r.pluralVerbEnding != "" && len(w.text) > 3 && strings.HasSuffix(w.text, r.pluralVerbEnding) &&
		!strings.HasSuffix(w.text, "te") && !r.notPluralVerbs[w.text]
}

// sentenceOpens reports whether the word at byte i opens a sentence.
func sentenceOpens(text string, i int) bool {
	return strings.TrimSpace(text[sentenceStart(text, i):i]) == ""
}

func joinWords(ws []word) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = w.text
	}
	return strings.Join(parts, " ")
}
