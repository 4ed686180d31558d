"""The seeds' anti-patterns as deliberately buggy agents, to prove each rule catches its bug.

Every agent here is the reference loop with one hook overridden, a few lines long, and names the
rule it breaks in `breaks`. The docstrings quote the seed that warns against the bug.
"""

from __future__ import annotations

from typing import Any

import anthropic
from anthropic.types import Message, ToolUseBlock

from ..trace._model import Outcome
from ._reference import Action, AgentLoop, Coordinator, text_of
from ._task import Task, ToolResult

Runner = type[AgentLoop] | type[Coordinator]


class BuggyAgent:
    """An agent `(client, task) -> Outcome` that commits one anti-pattern; `breaks` is the rule's code."""

    def __init__(self, name: str, runner: Runner, breaks: str) -> None:
        self.name = name
        self.runner = runner
        self.breaks = breaks
        self.__doc__ = runner.__doc__
        self.__name__ = name
        self.__qualname__ = name

    def __call__(self, client: anthropic.Anthropic, task: Task) -> Outcome:
        return self.runner(task).run(client)

    def __repr__(self) -> str:
        return f"<buggy agent {self.name} breaks {self.breaks}>"


# -- T: tool protocol ------------------------------------------------------------------------------


class _DropsParallelResults(AgentLoop):
    """Answers only the first of several parallel tool_use blocks.

    Seed 004, "Ignorar tool_use blocks múltiples": «Ejecutar solo la primera y descartar las demás
    produce información incompleta». Seed 000: «Olvidar un tool_result. Si el modelo pidió tres
    herramientas y devuelves dos, la API rechaza la petición.»
    """

    def result_blocks(self, tool_uses: list[ToolUseBlock], results: list[ToolResult]) -> list[dict[str, Any]]:
        return super().result_blocks(tool_uses, results)[:1]


class _ResultsInSeparateMessages(AgentLoop):
    """Sends each tool_result in a user message of its own.

    Seed 000: «Ejecutar cada tool_use, devolver todos los tool_result en un único mensaje user».
    """

    def add_tool_results(self, tool_uses: list[ToolUseBlock], results: list[ToolResult]) -> Outcome | None:
        stop = super().add_tool_results(tool_uses, results)
        blocks = self.messages.pop()["content"]
        self.messages.extend({"role": "user", "content": [block]} for block in blocks)
        return stop


class _TextBeforeResults(AgentLoop):
    """Puts its own text before the tool_results.

    Seed 000: «Mezclar texto antes de los resultados. En el mensaje user de respuesta, los
    tool_result van primero.»
    """

    def result_blocks(self, tool_uses: list[ToolUseBlock], results: list[ToolResult]) -> list[dict[str, Any]]:
        return [{"type": "text", "text": "Here is what the tools returned:"}, *super().result_blocks(tool_uses, results)]


class _ErrorWithoutIsError(AgentLoop):
    """Returns a tool's failure as if it were a normal result, without `is_error`.

    Seed 000: «Los errores de la herramienta se devuelven al modelo con is_error para que pueda
    corregir».
    """

    def result_blocks(self, tool_uses: list[ToolUseBlock], results: list[ToolResult]) -> list[dict[str, Any]]:
        blocks = super().result_blocks(tool_uses, results)
        for block in blocks:
            block.pop("is_error", None)
        return blocks


class _IgnoresUnknownTool(AgentLoop):
    """Gives no tool_result for a tool it has no handler for.

    Seed 001 §2, executeTools: «if (!handler) return { result: `Herramienta desconocida: ${block.name}`,
    isError: true }» — an unknown tool still gets its result, as an error.
    """

    def result_blocks(self, tool_uses: list[ToolUseBlock], results: list[ToolResult]) -> list[dict[str, Any]]:
        blocks = super().result_blocks(tool_uses, results)
        return [block for use, block in zip(tool_uses, blocks) if use.name in self.task.handlers]


class _UnknownToolAsSuccess(AgentLoop):
    """Answers a tool it has no handler for as if it had run: a `null` result without `is_error`.

    Seed 001 §2, executeTools: «if (!handler) return { result: `Herramienta desconocida: ${block.name}`,
    isError: true }» — a dispatcher with a do-nothing default tells the model the call worked.
    """

    def result_blocks(self, tool_uses: list[ToolUseBlock], results: list[ToolResult]) -> list[dict[str, Any]]:
        blocks = super().result_blocks(tool_uses, results)
        for use, block in zip(tool_uses, blocks):
            if use.name not in self.task.handlers:
                block["content"] = "null"
                block.pop("is_error", None)
        return blocks


class _RetriesFailingTool(AgentLoop):
    """Keeps going however many tool errors come in a row.

    Seed 000, limits: «Errores seguidos: Parar si la misma herramienta falla una y otra vez. 3 errores
    consecutivos.» Seed 001 §11: «el agente puede entrar en un loop infinito de reintentos».
    """

    def tool_error_limit(self) -> int | None:
        return None


class _ParallelSideEffects(AgentLoop):
    """Runs every tool of a turn concurrently, the ones with side effects too.

    Seed 000: «Si el orden importa o una herramienta tiene efectos secundarios, ejecútalas en
    secuencia o desactiva el paralelismo con disable_parallel_tool_use».
    """

    def sequential_tools(self) -> frozenset[str]:
        return frozenset()


# -- H: history integrity --------------------------------------------------------------------------


class _StripsThinking(AgentLoop):
    """Rebuilds the assistant message by hand, leaving the thinking blocks out.

    Seed 000: «Añade resp.content completo al historial, sin filtrar ni editar esos bloques» and
    «Reconstruir el mensaje assistant a mano. Cópialo entero de resp.content».
    """

    def assistant_message(self, response: Message) -> dict[str, Any]:
        message = super().assistant_message(response)
        message["content"] = [b for b in message["content"] if b["type"] not in {"thinking", "redacted_thinking"}]
        return message


class _KeepsOnlyText(AgentLoop):
    """Keeps only the text of each answer in the history (drops compaction and every other block).

    Seed 001 §8: «❌ MAL: quedarse solo con el texto rompe la compaction» —
    `messages.push({ role: 'assistant', content: soloTexto! })`.
    """

    def assistant_message(self, response: Message) -> dict[str, Any]:
        return {"role": "assistant", "content": text_of(response)}


class _TruncatesOldResults(AgentLoop):
    """Cuts old tool_results out of the history it keeps, client-side, with nothing declared.

    Seed 001 §7, anti-patterns: «Destrucción irreversible de contexto: truncar o borrar sin conservar
    el original»; the pruning belongs in a declared projection or server-side context management.
    """

    def history(self) -> list[dict[str, Any]]:
        for message in self.messages[:-1]:
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block.get("type") == "tool_result":
                    block["content"] = "[old result removed]"
        return super().history()


# -- L: loop control -------------------------------------------------------------------------------


class _DoneWhenText(AgentLoop):
    """Decides the task is done when the answer has text, whatever the stop_reason.

    Seed 001: «❌ MAL: verificar contenido de texto para detectar completitud — const isDone =
    response.content.some(b => b.type === 'text' && b.text.length > 0);». Seed 004: «el modelo puede
    generar texto Y tool calls juntos».
    """

    def after_response(self, response: Message) -> Action:
        action = super().after_response(response)
        if text_of(response):
            return Outcome(status="completed", reason="the answer has text", final_text=text_of(response))
        return action


class _ContinuesAfterEndTurn(AgentLoop):
    """Calls the model once more after `end_turn`, with no new human turn, "to be sure it is done".

    Seed 001: «"end_turn" El modelo terminó. El agente DEBE detenerse.»
    """

    double_checked = False

    def on_end_turn(self, response: Message) -> Action:
        if not self.double_checked:
            self.double_checked = True
            return None
        return super().on_end_turn(response)


class _EndsOnPauseTurn(AgentLoop):
    """Takes `pause_turn` for the end of the task and returns the partial text.

    Seed 000: «pause_turn — El servidor pausó un turno largo»; the loop calls again with the same
    history: «continue  # el historial ya tiene la respuesta: se vuelve a llamar».
    """

    def on_pause_turn(self, response: Message) -> Action:
        return Outcome(status="completed", reason="paused", final_text=text_of(response))


class _RetriesRefusal(AgentLoop):
    """Re-sends the refused request unchanged, hoping for another answer.

    Seed 000: «refusal — El modelo se niega a continuar por motivos de seguridad. No reintentes en
    bucle. Registra el caso, devuelve un mensaje claro al usuario y termina.»
    """

    retried = False

    def on_refusal(self, response: Message) -> Action:
        if not self.retried:
            self.retried = True
            self.messages.pop()
            return None
        return super().on_refusal(response)


class _RunsCutToolUse(AgentLoop):
    """Runs the tool_use of a response cut by `max_tokens`, whose input may be truncated.

    Seed 001: «"max_tokens" Se agotó el límite de tokens. Manejar como error.» Seed 000:
    «raise RuntimeError("Respuesta cortada: sube max_tokens o divide la tarea")».
    """

    def on_max_tokens(self, response: Message) -> Action:
        return self.on_tool_use(response)


class _UnknownStopAsSuccess(AgentLoop):
    """Returns success for a stop_reason it does not know (e.g. `model_context_window_exceeded`).

    Seed 000: «else: raise RuntimeError(f"stop_reason desconocido: {resp.stop_reason}")»; seed 001:
    «throw new Error(`stop_reason inesperado: ${response.stop_reason}`)».
    """

    def on_other(self, response: Message) -> Action:
        return Outcome(status="completed", reason=str(response.stop_reason), final_text=text_of(response))


# -- B: limits -------------------------------------------------------------------------------------


class _IterationCapOnly(AgentLoop):
    """Uses the iteration cap as the stop and reports the cut run as completed.

    Seed 001, anti-pattern 2: «Iteration cap como único mecanismo de parada ... Al llegar a i=10, el
    loop termina aunque stop_reason sea 'tool_use'». Seed 000: «Cuando salte un límite ... deja claro
    que la tarea quedó a medias.»
    """

    def stopped(self, limit: str, reason: str) -> Outcome:
        return Outcome(status="completed", reason="done", final_text=self.last_text)


class _IgnoresStepLimit(AgentLoop):
    """Has no step limit: it loops for as long as the model keeps asking for tools.

    Seed 000: «Pasos máximos — Cortar bucles en los que el modelo no avanza.» «el límite de pasos
    convierte un bucle infinito en un error que puedes ver».
    """

    def step_limit(self) -> int | None:
        return None


class _IgnoresTokenBudget(AgentLoop):
    """Never adds up the tokens it spends, so the budget never stops it.

    Seed 000: «Tokens acumulados — Poner techo al gasto de una tarea. Suma en cada vuelta
    usage.input_tokens, usage.output_tokens y los dos campos de caché».
    """

    def token_budget(self) -> int | None:
        return None


# -- R: request shape ------------------------------------------------------------------------------


class _TopLevelEffort(AgentLoop):
    """Sends `effort` at the top level of the request.

    Seed 001: «El nivel de esfuerzo es GA (sin cabecera beta) y va anidado en output_config, no en el
    nivel superior del request».
    """

    def request_params(self) -> dict[str, Any]:
        params = super().request_params()
        output_config = params.pop("output_config", {})
        params["effort"] = output_config.pop("effort", "high")
        if output_config:
            params["output_config"] = output_config
        return params


class _CompactionWithoutBeta(AgentLoop):
    """Asks for server-side compaction without its beta header.

    Seed 001 §8: «Beta compact-2026-01-12 ... headers: { 'anthropic-beta': 'compact-2026-01-12' }».
    """

    def headers(self, params: dict[str, Any]) -> dict[str, str]:
        return {k: v for k, v in self.task.extra_headers.items() if k.lower() != "anthropic-beta"}


class _StrictInsideSchema(AgentLoop):
    """Puts `strict: true` inside the tool's `input_schema`.

    Seed 001 §12: «strict: true va como campo top-level de la definición de la tool, y exige
    additionalProperties: false y required» — «// top-level, no dentro de input_schema».
    """

    def request_params(self) -> dict[str, Any]:
        params = super().request_params()
        params["tools"] = [
            {**{k: v for k, v in tool.items() if k != "strict"}, "input_schema": {**tool["input_schema"], "strict": True}}
            for tool in params.get("tools", [])
        ]
        return params


class _DatedModelId(AgentLoop):
    """Pins a 4.6+ model with a date suffix.

    Seed 001: «Desde la generación 4.6 los IDs de modelo no llevan sufijo de fecha ... nunca
    claude-opus-4-8-20260501».
    """

    def request_params(self) -> dict[str, Any]:
        params = super().request_params()
        params["model"] = f"{params['model']}-20260501"
        return params


class _LegacyOutputFormat(AgentLoop):
    """Asks for structured output with the legacy top-level `output_format`.

    Seed 001 §12: «la forma vigente es output_config.format ... El antiguo output_format y la cabecera
    structured-outputs-2025-11-13 solo funcionan durante un periodo de transición».
    """

    def request_params(self) -> dict[str, Any]:
        params = super().request_params()
        output_config = params.pop("output_config", {})
        params["output_format"] = output_config.pop("format", {"type": "json_schema", "schema": {"type": "object"}})
        if output_config:
            params["output_config"] = output_config
        return params


# -- E: errors -------------------------------------------------------------------------------------


class _ResendsBadRequest(AgentLoop):
    """Re-sends a request the API rejected with 400, unchanged.

    Seed 001 §6: «Validation → Corregir input»; classifyError: «PREREQUISITE_FAILED / invalid →
    isRetryable: false». Only transient errors are retried.
    """

    def call_model(self, client: anthropic.Anthropic) -> Message:
        try:
            return super().call_model(client)
        except anthropic.BadRequestError:
            return super().call_model(client)


# -- M: multi-agent --------------------------------------------------------------------------------


class _InheritsCoordinatorHistory(Coordinator):
    """Starts every subagent from the coordinator's conversation instead of a clean brief.

    Seed 001 §4: «Los subagentes NO heredan el historial del coordinador. Todo el contexto relevante
    debe inyectarse explícitamente en el prompt del subagente.»
    """

    def subagent_history(self) -> list[dict[str, Any]]:
        return list(self.main.messages)


# -- W: workflow policies --------------------------------------------------------------------------


class _RefundWithoutVerification(AgentLoop):
    """Trusts the prompt to verify the customer: its dispatcher has no prerequisite guard.

    Seed 001 §3: «El prerrequisito no se delega al modelo (no es confiable). Se implementa en el
    dispatcher» — process_refund without get_customer first.
    """

    def policies(self) -> dict[str, Any]:
        return {k: v for k, v in self.task.policies.items() if k != "prerequisites"}


class _SkipsApprovalGate(AgentLoop):
    """Runs an irreversible tool without waiting for the approval tool.

    Seed 001 §13, pattern 1: «El agente propone la acción, espera aprobación, y solo entonces ejecuta.»
    """

    def policies(self) -> dict[str, Any]:
        return {k: v for k, v in self.task.policies.items() if k != "approvals"}


class _IgnoresCircuitBreaker(AgentLoop):
    """Keeps calling a tool whose circuit is open.

    Seed 001 §11: «Cuando una herramienta falla repetidamente, el agente puede entrar en un loop
    infinito de reintentos»; an open circuit «Rechaza llamadas inmediatamente».
    """

    def policies(self) -> dict[str, Any]:
        return {k: v for k, v in self.task.policies.items() if k != "circuit_breakers"}


drops_parallel_results = BuggyAgent("drops_parallel_results", _DropsParallelResults, "T001")
results_in_separate_messages = BuggyAgent("results_in_separate_messages", _ResultsInSeparateMessages, "T002")
text_before_results = BuggyAgent("text_before_results", _TextBeforeResults, "T003")
error_without_is_error = BuggyAgent("error_without_is_error", _ErrorWithoutIsError, "T005")
ignores_unknown_tool = BuggyAgent("ignores_unknown_tool", _IgnoresUnknownTool, "T006")
unknown_tool_as_success = BuggyAgent("unknown_tool_as_success", _UnknownToolAsSuccess, "T006")
retries_failing_tool = BuggyAgent("retries_failing_tool", _RetriesFailingTool, "T007")
parallel_side_effects = BuggyAgent("parallel_side_effects", _ParallelSideEffects, "T008")
strips_thinking = BuggyAgent("strips_thinking", _StripsThinking, "H001")
keeps_only_text = BuggyAgent("keeps_only_text", _KeepsOnlyText, "H001")
truncates_old_results = BuggyAgent("truncates_old_results", _TruncatesOldResults, "H002")
continues_after_end_turn = BuggyAgent("continues_after_end_turn", _ContinuesAfterEndTurn, "L001")
done_when_text = BuggyAgent("done_when_text", _DoneWhenText, "L002")
ends_on_pause_turn = BuggyAgent("ends_on_pause_turn", _EndsOnPauseTurn, "L003")
retries_refusal = BuggyAgent("retries_refusal", _RetriesRefusal, "L004")
runs_cut_tool_use = BuggyAgent("runs_cut_tool_use", _RunsCutToolUse, "L005")
unknown_stop_as_success = BuggyAgent("unknown_stop_as_success", _UnknownStopAsSuccess, "L006")
ignores_step_limit = BuggyAgent("ignores_step_limit", _IgnoresStepLimit, "B001")
ignores_token_budget = BuggyAgent("ignores_token_budget", _IgnoresTokenBudget, "B002")
iteration_cap_only = BuggyAgent("iteration_cap_only", _IterationCapOnly, "B004")
top_level_effort = BuggyAgent("top_level_effort", _TopLevelEffort, "R001")
compaction_without_beta = BuggyAgent("compaction_without_beta", _CompactionWithoutBeta, "R002")
strict_inside_schema = BuggyAgent("strict_inside_schema", _StrictInsideSchema, "R004")
dated_model_id = BuggyAgent("dated_model_id", _DatedModelId, "R005")
legacy_output_format = BuggyAgent("legacy_output_format", _LegacyOutputFormat, "R006")
resends_bad_request = BuggyAgent("resends_bad_request", _ResendsBadRequest, "E002")
inherits_coordinator_history = BuggyAgent("inherits_coordinator_history", _InheritsCoordinatorHistory, "M001")
refund_without_verification = BuggyAgent("refund_without_verification", _RefundWithoutVerification, "W001")
skips_approval_gate = BuggyAgent("skips_approval_gate", _SkipsApprovalGate, "W002")
ignores_circuit_breaker = BuggyAgent("ignores_circuit_breaker", _IgnoresCircuitBreaker, "W003")

BUGGY_AGENTS: dict[str, BuggyAgent] = {
    agent.name: agent for agent in list(globals().values()) if isinstance(agent, BuggyAgent)
}
"""Every buggy agent by name."""
