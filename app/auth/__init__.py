"""Who may call: passwords, tokens, throttling, the role policy, the gate every transport passes
(`gate`) and `AuthService` (`service`). Knows no service, transport or simulation."""
