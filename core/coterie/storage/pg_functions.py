"""The PL/pgSQL functions a PostgreSQL store's connections make for themselves
(:data:`PG_SETUP`), used by :mod:`coterie.storage.postgres` and :mod:`coterie.storage.shared`."""

#: functions each connection creates for itself (in its temporary schema, so no migration is
#: involved). A VOLATILE PL/pgSQL function takes a fresh snapshot for each query, so a read sees
#: everything committed before the lock was granted.
#:
#: ``coterie_lock_read``: take the session-level advisory lock of ``lock_key`` (none for ``''``),
#: then, when ``take`` is given, take tokens with it (the verdict is one row under
#: :data:`coterie.storage.postgres.TOKENS_NS`), then read the given keys — ``kv`` values, and
#: the active characters asked for under :data:`coterie.storage.postgres.ACTIVE_NS`.
#:
#: ``coterie_take_tokens``: the shared rate limits' token buckets (one ``kv`` row for the user's,
#: one for the room's), read, decided and written in the calling statement, with the rows'
#: transaction-level advisory locks taken in the order of their names: the statement commits
#: before the locks are freed, and two callers never wait for each other in a cycle. The decision
#: is :func:`coterie.framework.ratelimit.decide`, step by step in the same floating-point
#: operations (``tests/test_ratelimit_shared.py`` plays the same commands through both). The
#: request is :func:`coterie.storage.shared.take_request`'s JSON; the verdict is JSON too.
PG_SETUP = """
CREATE OR REPLACE FUNCTION pg_temp.coterie_take_tokens(lock_class integer, request text)
RETURNS text LANGUAGE plpgsql VOLATILE AS $body$
DECLARE
    r json := request::json;
    space text := r->>'space';
    cost float8 := (r->>'cost')::float8;
    moment float8 := (r->>'now')::float8;
    burst float8[] := ARRAY[(r->>'user_burst')::float8, (r->>'room_burst')::float8];
    rate float8[] := ARRAY[(r->>'user_rate')::float8, (r->>'room_rate')::float8];
    names text[] := ARRAY[r->>'user', r->>'room'];
    tokens float8[] := ARRAY[0, 0];
    updated float8[] := ARRAY[0, 0];
    warned float8[] := ARRAY[0, 0];
    waits float8[] := ARRAY[0, 0];
    name text;
    stored text;
    verdict text;
    dry integer;
    wait float8;
BEGIN
    FOR name IN SELECT unnest(names) ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock(
            lock_class, hashtext('coterie.shared' || chr(31) || space || chr(31) || name)
        );
    END LOOP;
    FOR i IN 1..2 LOOP
        SELECT kv.value INTO stored FROM kv WHERE kv.namespace = space AND kv.key = names[i];
        IF stored IS NULL THEN
            tokens[i] := burst[i];
            updated[i] := moment;
        ELSE
            tokens[i] := (stored::json->>'t')::float8;
            updated[i] := (stored::json->>'u')::float8;
            warned[i] := coalesce((stored::json->>'w')::float8, 0);
        END IF;
        tokens[i] := least(burst[i], tokens[i] + greatest(0, moment - updated[i]) * rate[i]);
        updated[i] := greatest(updated[i], moment);
        waits[i] := greatest(0, cost - tokens[i]) / rate[i];
    END LOOP;
    IF waits[1] <= 0 AND waits[2] <= 0 THEN
        tokens[1] := tokens[1] - cost;
        tokens[2] := tokens[2] - cost;
        verdict := json_build_object('allowed', true)::text;
    ELSE
        wait := greatest(waits[1], waits[2]);
        dry := CASE WHEN waits[1] >= waits[2] THEN 1 ELSE 2 END;
        IF moment < warned[dry] THEN
            verdict := json_build_object('allowed', false, 'warn', false, 'retry_after', wait,
                'scope', CASE dry WHEN 1 THEN 'user' ELSE 'room' END)::text;
        ELSE
            warned[dry] := moment + greatest(wait, (burst[dry] - tokens[dry]) / rate[dry]);
            verdict := json_build_object('allowed', false, 'warn', true, 'retry_after', wait,
                'scope', CASE dry WHEN 1 THEN 'user' ELSE 'room' END)::text;
        END IF;
    END IF;
    INSERT INTO kv (namespace, key, value, updated_at)
        SELECT space, names[n], json_build_object('t', tokens[n], 'u', updated[n],
            'w', warned[n])::text, (r->>'stamp')::float8
        FROM generate_series(1, 2) AS n ORDER BY names[n]
    ON CONFLICT (namespace, key) DO UPDATE SET value = EXCLUDED.value,
        updated_at = EXCLUDED.updated_at;
    RETURN verdict;
END
$body$;
CREATE OR REPLACE FUNCTION pg_temp.coterie_lock_read(
    lock_class integer, lock_key text, namespaces text[], keys text[], take text
) RETURNS TABLE (namespace text, key text, value text) LANGUAGE plpgsql VOLATILE AS $body$
BEGIN
    IF lock_key <> '' THEN
        PERFORM pg_advisory_lock(lock_class, hashtext(lock_key));
    END IF;
    IF take IS NOT NULL THEN
        RETURN QUERY SELECT chr(29) || 'tokens', '', pg_temp.coterie_take_tokens(lock_class, take);
    END IF;
    RETURN QUERY SELECT kv.namespace, kv.key, kv.value
        FROM kv JOIN unnest(namespaces, keys) AS wanted (ns, k)
        ON kv.namespace = wanted.ns AND kv.key = wanted.k
    UNION ALL SELECT wanted.ns, wanted.k, c.key || chr(31) || c.sheet
        FROM unnest(namespaces, keys) AS wanted (ns, k) JOIN characters AS c
        ON wanted.ns = chr(29) || 'character'
        AND c.chronicle = split_part(wanted.k, chr(31), 1)
        AND c.owner = split_part(wanted.k, chr(31), 2) AND c.active;
END
$body$
"""
