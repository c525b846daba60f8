-- spendgate_budget_subject: its one source. Edit it here; `migrate` re-applies a function whose text changed (docs/architecture.md, "Stored functions").
-- Before this file, its body was copied into migrations; the last of them: 20261123211800_attribution_ledger (of 1).
CREATE OR REPLACE FUNCTION public.spendgate_budget_subject(p_scope "BudgetScope", p_scope_key uuid, p_scope_value text, p_has_task boolean, p_key uuid, p_user text, p_tags text[], p_model_scope "ModelScope", p_model_value text, p_model text, p_family text, p_kind text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  SELECT CASE
    -- a cap on part of the catalog counts only tasks of that model, family or kind (decisions §20)
    WHEN p_model_scope IS NOT NULL AND (NOT p_has_task OR NOT spendgate_counts_model(p_model_scope, p_model_value, p_model, p_family, p_kind)) THEN NULL
    WHEN p_scope = 'PROJECT' THEN ''
    WHEN NOT p_has_task THEN NULL
    WHEN p_scope = 'API_KEY' THEN CASE WHEN p_scope_key = p_key THEN '' END
    WHEN p_scope = 'TAG' THEN CASE WHEN p_scope_value = ANY (p_tags) THEN '' END
    WHEN p_scope = 'USER' THEN CASE WHEN p_scope_value = p_user THEN '' END
    ELSE p_user -- EACH_USER: the user's own balance (none without a user)
  END
$function$;

COMMENT ON FUNCTION public.spendgate_budget_subject(p_scope "BudgetScope", p_scope_key uuid, p_scope_value text, p_has_task boolean, p_key uuid, p_user text, p_tags text[], p_model_scope "ModelScope", p_model_value text, p_model text, p_family text, p_kind text) IS 'Under which subject a budget of this scope (and model scope) counts a task with this attribution and model; NULL: it does not. Entries without a task (an adjustment of the project) count for PROJECT budgets without a model scope only. Limits pass no model scope.';
