-- Sign-ins of the DM console (bot/console), so that restarting the console,
-- or a second console on the same database, does not sign everyone out.
-- id_hash is the SHA-256 of the browser's cookie: whoever reads this table
-- cannot sign in with it. csrf is the session's anti-forgery token.
CREATE TABLE console_signins (
	id_hash     bytea PRIMARY KEY,
	campaign_id text NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
	user_id     text NOT NULL,
	name        text NOT NULL,
	dm          boolean NOT NULL,
	csrf        text NOT NULL,
	expires_at  timestamptz NOT NULL
);

CREATE INDEX console_signins_expiry ON console_signins (expires_at);
