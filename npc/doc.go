// Package npc turns a corrected player utterance into an NPC's reply.
//
// An NPC is a [Persona] linked to its knowledge-graph entity. Per utterance
// the [Addresser] decides which NPCs (if any) were spoken to, by the rules of
// the table's language (English, German: [Addresser.UseLanguage]), and the
// [Floor] makes NPCs take turns. An [Agent] runs one turn: it assembles the NPC's hot
// context (identity, recent transcript, scene, memory traces), streams the
// reply from an OpenAI-compatible LLM sentence by sentence, and lets the
// model use memory tools — which run with the NPC's permissions, never the
// model's say-so: an NPC can only search, recall and query what it could
// know, and can only propose facts for the DM's review.
//
// Without a language model, or when it fails before saying anything, a
// [Fallback] answers instead (set [Config.Fallback]): a short extractive
// reply from what the NPC itself knows and heard others say, or a brief
// in-character "I don't know" that never repeats the question (a greeting,
// thanks, small talk such as "how are you?" or its name called gets a word
// back); never a
// secret, never a retold NPC reply; marked in [TurnResult.Fallback],
// logged and counted. [OfflineBehaviour] says it in one sentence.
package npc
